// Package repo reads a repository as a file tree: the working tree (minus
// ignored files) or any git revision without checking it out.
package repo
