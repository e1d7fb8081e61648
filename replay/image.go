package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ResolveImage makes sure the image ref is present in engine and, when digest is
// set, that it is that image: its ID or one of its registry digests must
// equal digest. An absent image is pulled (by ref@digest when pinned). When
// ref names another image, the pinned one is used if the engine still has
// it by ID (a base built again moves the tag, not the old image); else it
// is an error naming both digests: a pin is never silently replaced.
func ResolveImage(ctx context.Context, engine Engine, ref, digest string) (ImageInfo, error) {
	return resolve(ctx, engine, "base image", "build it offline with `bootstrap image build-base` from the archive the contract names, or synth again to pin the one here", ref, digest)
}

// resolve is ResolveImage for any image: what names it in errors, and
// hint says how to provide it when it can be neither found nor pulled.
func resolve(ctx context.Context, engine Engine, what, hint, ref, digest string) (ImageInfo, error) {
	info, err := engine.InspectImage(ctx, ref)
	if errors.Is(err, ErrNotFound) && digest != "" && ref != digest {
		// Loaded rather than pulled, it has no registry digest to be found
		// by, only its ID.
		if byID, ierr := engine.InspectImage(ctx, digest); ierr == nil && ImageMatches(byID, digest) {
			return byID, nil
		}
	}
	if errors.Is(err, ErrNotFound) {
		pull := ref
		if digest != "" && !strings.Contains(ref, "@") && ref != digest {
			pull = ref + "@" + digest
		}
		if perr := engine.PullImage(ctx, pull); perr != nil {
			return ImageInfo{}, fmt.Errorf("resolving %s %q: not present locally, and pulling %q failed (%s): %w", what, ref, pull, hint, perr)
		}
		info, err = engine.InspectImage(ctx, pull)
	}
	if err != nil {
		return ImageInfo{}, fmt.Errorf("resolving %s %q: %w", what, ref, err)
	}
	if digest != "" && !ImageMatches(info, digest) {
		// The tag moved (the base was built again), but the pinned image
		// may still be here by its ID: that one is the contract's.
		if strings.HasPrefix(digest, "sha256:") {
			if pinned, perr := engine.InspectImage(ctx, digest); perr == nil && ImageMatches(pinned, digest) {
				return pinned, nil
			}
		}
		return ImageInfo{}, fmt.Errorf("resolving %s %q: it is %s, but the contract pins %s, which is not here (%s)", what, ref, describe(info), digest, hint)
	}
	return info, nil
}

// ImageMatches reports whether digest names the image: its ID, or the digest
// part of one of its registry digests.
func ImageMatches(info ImageInfo, digest string) bool {
	if info.ID == digest {
		return true
	}
	for _, rd := range info.RepoDigests {
		if _, d, ok := strings.Cut(rd, "@"); ok && d == digest {
			return true
		}
	}
	return false
}

func describe(info ImageInfo) string {
	if len(info.RepoDigests) == 0 {
		return info.ID
	}
	return info.ID + " (" + strings.Join(info.RepoDigests, ", ") + ")"
}
