package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// An error can quote what a repository holds; what reaches the terminal
// holds no escape sequence, only its written form.
func TestErrorsShowNoControlCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a\x1b[2Jb\x07c")
	var stdout, stderr bytes.Buffer
	code := run([]string{"verify", dir}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	got := stderr.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Fatalf("stderr holds a control character: %q", got)
	}
	if !strings.Contains(got, `a\x1b[2Jb\ac`) {
		t.Fatalf("stderr does not name the path in its written form: %q", got)
	}
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"two\nlines\tand a tab": "two\nlines\tand a tab",
		"\x1b]0;title\x07":      `\x1b]0;title\a`,
		"c1 \u009b31m":          `c1 \u009b31m`,
		"del \x7f":              `del \x7f`,
	} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %q, want %q", in, got, want)
		}
	}
}
