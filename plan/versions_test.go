package plan

import (
	"testing"
)

func TestResolveEmbedded(t *testing.T) {
	tab := EmbeddedTable()
	cases := []struct{ tool, spec, want string }{
		{"go", "1.22", "1.22.12"},
		{"go", "1.21.0", "1.21.0"},
		{"go", "go1.22.5", "1.22.5"},
		{"go", "1.20", "1.20.14"},
		{"go", "1.22.x", "1.22.12"},
		{"go", "^1.21", "1.27.4"},
		{"go", "stable", "1.27.4"},
		{"go", "oldstable", "1.26.11"},
		{"node", "^18", "18.20.8"},
		{"node", "18.x", "18.20.8"},
		{"node", ">=18.12", "24.22.3"},
		{"node", ">= 18.12 <21", "20.20.2"},
		{"node", "lts/*", "24.22.3"},
		{"node", "lts/iron", "20.20.2"},
		{"node", "lts/Hydrogen", "18.20.8"},
		{"node", "node", "26.12.1"},
		{"node", "v20.11.1", "20.11.1"},
		{"node", "20", "20.20.2"},
		{"node", "~20.10", "20.10.0"},
		{"node", "16 - 18", "18.20.8"},
		{"node", "^14 || ^16", "16.20.2"},
		{"node", "25", "25.9.0"},
		{"node", "<20 >=19", "19.8.1"},
	}
	for _, c := range cases {
		got, err := tab.Resolve(c.tool, c.spec)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s, %q) = %q, %v; want %q", c.tool, c.spec, got, err, c.want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	tab := EmbeddedTable()
	for _, c := range []struct{ tool, spec string }{
		{"go", "1.99"}, {"go", "banana"}, {"node", "lts/unknown"}, {"node", "^99"}, {"ruby", "3"}, {"go", "1.22.1.1"},
	} {
		if v, err := tab.Resolve(c.tool, c.spec); err == nil {
			t.Errorf("Resolve(%s, %q) = %q, want an error", c.tool, c.spec, v)
		}
	}
}

func TestNewTableRejectsBadVersion(t *testing.T) {
	if _, err := NewTable(map[string][]string{"go": {"1.22.0", "1.x"}}); err == nil {
		t.Fatal("NewTable accepted 1.x")
	}
	tab, err := NewTable(map[string][]string{"node": {"22.1.0", "20.3.0", "21.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	// 21 is not an LTS line, so an open range prefers 20 only when 22 is excluded.
	if v, _ := tab.Resolve("node", ">=20 <22"); v != "20.3.0" {
		t.Errorf("got %q, want the LTS match 20.3.0", v)
	}
	if v, _ := tab.Resolve("node", "21"); v != "21.0.0" {
		t.Errorf("got %q, want 21.0.0", v)
	}
}
