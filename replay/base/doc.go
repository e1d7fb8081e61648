// Package base builds the default base image without a registry, so that
// the same Debian archive gives the same image ID on every machine.
//
// Build runs debootstrap (minbase variant) from the Debian mirror the host's
// apt sources name, scrubs what varies between runs of the same package set
// (apt lists, logs, caches, machine-id, password-change dates), writes the
// root filesystem as a deterministic tar (sorted, owners numeric, mtimes
// clamped to SOURCE_DATE_EPOCH) and loads it into the engine as a
// docker-archive (WriteArchive).
//
// The image ID is reproducible: Docker's image ID is the sha256 of the image
// config, and the config Build writes holds only the layer's digest (the
// sha256 of the root filesystem tar), the epoch as creation time, the
// architecture and OS, Debian's PATH and a history entry naming the suite
// and packages (not the mirror). The same packages on the same epoch give
// the same ID on every machine of one architecture, so a digest pinned in a
// contract on one machine matches the image built on another. (An import
// with ImageImport would stamp the current time into the config instead.)
package base
