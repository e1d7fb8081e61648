package base

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mirror returns the Debian archive URL the apt sources under root use for
// suite: deb822 files in etc/apt/sources.list.d/*.sources first, then the
// one-line etc/apt/sources.list. It never guesses a host.
func Mirror(root, suite string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(root, "etc/apt/sources.list.d/*.sources"))
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("reading apt sources %s: %w", f, err)
		}
		for _, stanza := range strings.Split(string(data), "\n\n") {
			fields := deb822(stanza)
			if !slices.Contains(fields["types"], "deb") || !slices.Contains(fields["suites"], suite) {
				continue
			}
			if strings.EqualFold(first(fields["enabled"]), "no") {
				continue
			}
			if u := first(fields["uris"]); u != "" {
				return u, nil
			}
		}
	}
	list := filepath.Join(root, "etc/apt/sources.list")
	if f, err := os.Open(list); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			w := strings.Fields(sc.Text())
			if len(w) == 0 || w[0] != "deb" {
				continue
			}
			w = w[1:]
			if len(w) > 0 && strings.HasPrefix(w[0], "[") {
				// Skip an options block: "[arch=amd64 signed-by=...]".
				for len(w) > 0 && !strings.HasSuffix(w[0], "]") {
					w = w[1:]
				}
				if len(w) > 0 {
					w = w[1:]
				}
			}
			if len(w) >= 2 && w[1] == suite {
				return w[0], nil
			}
		}
	}
	return "", fmt.Errorf("no apt source for Debian %q in %s or %s; pass the mirror explicitly", suite,
		filepath.Join(root, "etc/apt/sources.list.d/*.sources"), list)
}

// deb822 parses one stanza into lower-cased field names and their
// whitespace-separated values, ignoring comments.
func deb822(stanza string) map[string][]string {
	out := map[string][]string{}
	var last string
	for _, line := range strings.Split(stanza, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && last != "" {
			out[last] = append(out[last], strings.Fields(line)...)
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		last = strings.ToLower(strings.TrimSpace(k))
		out[last] = strings.Fields(v)
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
