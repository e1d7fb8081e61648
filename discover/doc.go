// Package discover mines a repository for setup evidence: READMEs, CI workflows, manifests and lockfiles, each fact with its path, line, excerpt and file digest.
package discover
