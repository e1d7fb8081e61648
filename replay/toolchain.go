package replay

import (
	"context"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Toolchains fetches language toolchains as verified, content-addressed
// inputs. The toolchain package implements it against the Go module proxy and
// the npm registry.
type Toolchains interface {
	// Fetch resolves tc to its bytes, verifies them against tc.Hash when it
	// is set (a mismatch is an error), and returns the unpacked artifact.
	Fetch(ctx context.Context, tc contract.Toolchain) (Artifact, error)
}

// Artifact is a fetched, verified toolchain unpacked on the host.
type Artifact struct {
	// Toolchain is the request with Source and Hash filled in.
	Toolchain contract.Toolchain
	// Dir is a host directory holding the unpacked toolchain; it is shared
	// between runs and must be treated as read-only.
	Dir string
	// PathDirs are directories relative to Dir to put on PATH, in order.
	PathDirs []string
	// Env holds variables the toolchain needs; "$ROOT" in a value stands for
	// the directory the toolchain is mounted at inside the container.
	Env map[string]string
}
