package greet

import "testing"

func TestHello(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"", "hello, world"}, {"gopher", "hello, gopher"}} {
		if got := Hello(tc.in); got != tc.want {
			t.Errorf("Hello(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
