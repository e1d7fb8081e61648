package plan

import (
	"testing"

	"github.com/bootstrap-dev/bootstrap/discover"
)

// Cases found by planning real repositories (see each test's comment).

// vercel/ms pins "pnpm@10.14.0-0+sha512...", a prerelease the registry
// publishes; a field with no exact version falls back to the lockfile's.
func TestPackageManagerExactPrerelease(t *testing.T) {
	lock := ev(discover.KindLockfile, "pnpm-lock.yaml", 1, "manager", "pnpm", "format", "9.0")
	for field, want := range map[string]string{
		"pnpm@10.14.0-0+sha512.2cd47a0c": "npm:pnpm@10.14.0-0",
		"pnpm@10.14.0":                   "npm:pnpm@10.14.0",
		"pnpm@latest":                    "npm:pnpm@9.15.9",
	} {
		out := explain(t, result([]discover.Project{proj(".", "node")},
			ev(discover.KindPackageJSON, "package.json", 1, "packageManager", field), lock,
			ev(discover.KindPackageScript, "package.json", 4, "name", "test", "command", "jest")))
		if tc := out.Contract.Toolchain("pnpm"); tc == nil || tc.Source != want {
			t.Errorf("packageManager %q: pnpm toolchain = %+v, want %s", field, tc, want)
		}
	}
}
