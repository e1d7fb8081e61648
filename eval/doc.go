// Package eval runs the pipeline over a corpus of repositories and reports how each one fared.
package eval
