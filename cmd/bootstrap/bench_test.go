package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBareTimeKeepsTheBudget: a bench child that never ends (a bare run
// has no step timeouts) is interrupted at the row's budget and reported,
// instead of holding up the rest of the corpus.
func TestBareTimeKeepsTheBudget(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "hangs")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho 'npm install: still retrying' >&2\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := bareTime(exe, 300*time.Millisecond)(context.Background(), t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "outlived the budget (300ms)") || !strings.Contains(err.Error(), "still retrying") {
		t.Fatalf("got %v, want the budget named with the child's last words", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %s: the child was not interrupted", d)
	}
}
