package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIsolatedInterruptAsItEnds: a synth child that is interrupted as it
// ends and still ends as synth does (exit 0, its summary written) is that
// row's result, not an error a resume would run again; one the interrupt
// stops (exit 130) is the row's error.
func TestIsolatedInterruptAsItEnds(t *testing.T) {
	for _, tc := range []struct {
		code    int
		wantErr bool
	}{{0, false}, {130, true}} {
		dir := t.TempDir()
		exe := filepath.Join(t.TempDir(), "synth.sh")
		// Waits for the interrupt, then writes a verified summary and
		// exits with the code.
		script := "#!/bin/sh\nd=\"$(eval echo \\${$#})\"\nmkdir -p \"$d/.bootstrap/runs\"\n" +
			"trap 'echo \"{\\\"verified\\\": true, \\\"iterations\\\": 1}\" > \"$d/.bootstrap/runs/synth.json\"; exit " + strconv.Itoa(tc.code) + "' INT\n" +
			"touch \"$d/started\"\nwhile :; do sleep 0.05; done\n"
		if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for i := 0; i < 200; i++ {
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
		sum, err := isolated(exe, nil, io.Discard)(ctx, dir, "", "")
		cancel()
		if tc.wantErr != (err != nil) || sum == nil || !sum.Verified {
			t.Errorf("exit %d: summary %+v, err %v; want an error: %v", tc.code, sum, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "synth exited") {
			t.Errorf("exit %d: err %v", tc.code, err)
		}
	}
}
