package release

import (
	"strings"
	"testing"
)

var nodeList = []string{
	"0.0.3", "0.0.4", "0.2.3", "0.2.5", "0.3.0",
	"1.0.0", "1.2.0", "1.2.3", "1.2.9", "1.3.0-rc.1", "1.3.0", "1.4.2", "1.10.0",
	"2.0.0-beta.1", "2.0.0", "2.1.1",
	"18.19.0", "18.20.4", "20.0.0", "20.11.0", "20.11.1", "20.12.2", "21.7.3", "22.3.0-nightly", "22.4.1",
}

var goList = []string{"1.19", "1.19.13", "1.20", "1.20.1", "1.20.14", "1.21rc2", "1.21rc10", "1.21.0", "1.21.13", "1.22rc1", "1.22.0", "1.22.5", "1.22.12", "1.23.0"}

func TestResolve(t *testing.T) {
	tests := []struct {
		list []string
		spec string
		want string // "" means an error
	}{
		{nodeList, "20.11.1", "20.11.1"},
		{nodeList, "v20.11.1", "20.11.1"},
		{nodeList, "=20.11.1", "20.11.1"},
		{nodeList, "20.11", "20.11.1"},
		{nodeList, "20.11.x", "20.11.1"},
		{nodeList, "20", "20.12.2"},
		{nodeList, "20.x", "20.12.2"},
		{nodeList, "20.X.x", "20.12.2"},
		{nodeList, "*", "22.4.1"},
		{nodeList, "", "22.4.1"},
		{nodeList, "x", "22.4.1"},
		{nodeList, "latest", "22.4.1"},
		{nodeList, "^20.11.0", "20.12.2"},
		{nodeList, "^20", "20.12.2"},
		{nodeList, "^1.2.3", "1.10.0"},
		{nodeList, "^1.2", "1.10.0"},
		{nodeList, "^0.2.3", "0.2.5"},
		{nodeList, "^0.2", "0.2.5"},
		{nodeList, "^0.0.3", "0.0.3"},
		{nodeList, "^0.0", "0.0.4"},
		{nodeList, "^0", "0.3.0"},
		{nodeList, "^0.x", "0.3.0"},
		{nodeList, "~1.2.3", "1.2.9"},
		{nodeList, "~1.2", "1.2.9"},
		{nodeList, "~1", "1.10.0"},
		{nodeList, "~>1.2.0", "1.2.9"},
		{nodeList, "~20.11.0", "20.11.1"},
		{nodeList, ">=18", "22.4.1"},
		{nodeList, ">= 18 < 21", "20.12.2"},
		{nodeList, ">=18.0.0 <21.0.0", "20.12.2"},
		{nodeList, ">18.20.4 <20.11.1", "20.11.0"},
		{nodeList, ">20", "22.4.1"},
		{nodeList, ">20.11", "22.4.1"},
		{nodeList, ">1.2 <2", "1.10.0"},
		{nodeList, "<2", "1.10.0"},
		{nodeList, "<2.0.0", "1.10.0"},
		{nodeList, "<=1.2", "1.2.9"},
		{nodeList, "<=1.2.3", "1.2.3"},
		{nodeList, "<= 20", "20.12.2"},
		{nodeList, "18 || 20", "20.12.2"},
		{nodeList, "^18.0.0 || ^16", "18.20.4"},
		{nodeList, "16.x || >=21 <22", "21.7.3"},
		{nodeList, "1.2.3 - 1.4", "1.4.2"},
		{nodeList, "1.2 - 1.2.9", "1.2.9"},
		{nodeList, "18 - 20.11", "20.11.1"},
		{nodeList, "1.3.0-rc.1", "1.3.0-rc.1"}, // named exactly
		{nodeList, "^22.3.0", "22.4.1"},        // never the nightly
		{nodeList, "~2.0.0", "2.0.0"},          // not the beta
		{nodeList, "~22.3.0", ""},              // only a pre-release fits
		{nodeList, "^3", ""},
		{nodeList, ">22.4.1", ""},
		{nodeList, ">*", ""},
		{nodeList, "<0.0.0", ""},
		{nodeList, "banana", ""},
		{nodeList, "1.2.3.4", ""},
		{nodeList, "^1.2.x-rc", ""},
		{nil, "20", ""},

		{goList, "1.22", "1.22.12"},
		{goList, "go1.22", "1.22.12"},
		{goList, "1.22.5", "1.22.5"},
		{goList, "go1.22.5", "1.22.5"},
		{goList, "1.20", "1.20.14"},
		{goList, "1.19.0", "1.19"}, // Go 1.19 was released as "1.19"
		{goList, "1.21", "1.21.13"},
		{goList, "1.21rc2", "1.21rc2"},
		{goList, "go1.21rc10", "1.21rc10"},
		{goList, ">=1.21", "1.23.0"},
		{goList, "1.24", ""},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.list, tt.spec)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Resolve(%q) = %q, want an error", tt.spec, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.spec, got, err, tt.want)
		}
	}
}

func TestResolveErrorNamesSpec(t *testing.T) {
	_, err := Resolve(nodeList, ">=1.2.3 <x.y")
	if err == nil || !strings.Contains(err.Error(), `">=1.2.3 <x.y"`) {
		t.Fatalf("err = %v, want it to name the range", err)
	}
}

func TestSortVersions(t *testing.T) {
	vs := []string{"1.21.0", "1.21rc10", "1.20", "1.21rc2", "1.3.0", "1.3.0-rc.1", "1.3.0-rc.1.2", "1.3.0-alpha", "1.3.0-1", "junk", "1.10.0"}
	sortVersions(vs)
	want := "junk 1.3.0-1 1.3.0-alpha 1.3.0-rc.1 1.3.0-rc.1.2 1.3.0 1.10.0 1.20 1.21rc2 1.21rc10 1.21.0"
	if got := strings.Join(vs, " "); got != want {
		t.Fatalf("sorted:\n got %s\nwant %s", got, want)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"^1.2.3", ">= 18 < 21 || 1.x", "1.2 - 2", "go1.22", "~0.0", "<=*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := Resolve(nodeList, spec)
		if err == nil && got == "" {
			t.Fatalf("Resolve(%q) returned nothing without an error", spec)
		}
	})
}
