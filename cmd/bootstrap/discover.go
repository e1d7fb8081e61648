package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/discover"
)

func newDiscover() *cobra.Command {
	var asJSON bool
	var rev string
	cmd := &cobra.Command{
		Use:   "discover [--json] [--rev REV] [PATH]",
		Short: "Print every piece of setup evidence the repository holds",
		Long: `discover mines PATH (default ".") for setup evidence: README shell blocks,
CI workflows, build files, manifests and lockfiles. Each fact is printed with
the file and line it came from. With --rev it reads a git revision without
checking it out; with --json it prints the full result as JSON.`,
		Example: `  bootstrap discover
  bootstrap discover --json path/to/repo | jq '.evidence[] | select(.kind == "gha.run")'
  bootstrap discover --rev v1.2.0`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := discover.Dir(cmd.Context(), pathArg(args), rev)
			if err != nil {
				return err
			}
			if err := noteUncommitted(cmd, pathArg(args), res, "read"); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printEvidence(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&rev, "rev", "", "read this git revision instead of the working tree")
	return cmd
}

// noteUncommitted says on stderr which files the working tree's evidence
// came from that differ from HEAD: verify replays HEAD and will not see
// them.
func noteUncommitted(cmd *cobra.Command, dir string, res *discover.Result, verb string) error {
	files, err := discover.Uncommitted(cmd.Context(), dir, res)
	if err != nil || len(files) == 0 {
		return err
	}
	names := files
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(files)-5)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "note: %s uncommitted changes to %s%s; verify replays the commit (%.12s) and will not see them: commit them, or verify --worktree\n",
		verb, strings.Join(names, ", "), more, res.Commit)
	return nil
}

// printEvidence is the readable summary: projects, then evidence grouped by file.
func printEvidence(w io.Writer, res *discover.Result) {
	if res.Commit != "" {
		src := "commit"
		if res.Worktree {
			src = "working tree at"
		}
		fmt.Fprintf(w, "%s %s\n", src, res.Commit)
	}
	fmt.Fprintf(w, "%d project(s):\n", len(res.Projects))
	width := 20
	for _, p := range res.Projects {
		width = max(width, len(p.Root))
	}
	for _, p := range res.Projects {
		fmt.Fprintf(w, "  %-*s %s  (%s)\n", width, p.Root, strings.Join(p.Ecosystems, ", "), strings.Join(p.Markers, ", "))
	}
	byFile := map[string][]discover.Evidence{}
	for _, e := range res.Evidence {
		byFile[e.Path] = append(byFile[e.Path], e)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	fmt.Fprintf(w, "%d evidence item(s) in %d file(s):\n", len(res.Evidence), len(files))
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
		// One line of the file that is evidence of several kinds (a
		// setup action is gha.uses and gha.setup) is shown once.
		ev := byFile[f]
		for i := 0; i < len(ev); {
			kinds := []string{string(ev[i].Kind)}
			j := i + 1
			for ; j < len(ev) && ev[j].Line == ev[i].Line && ev[j].Excerpt == ev[i].Excerpt; j++ {
				kinds = append(kinds, string(ev[j].Kind))
			}
			fmt.Fprintf(w, "    %4d  %-22s %s\n", ev[i].Line, strings.Join(kinds, ","), oneLine(ev[i].Excerpt, 90))
			i = j
		}
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(w, "%d problem(s):\n", len(res.Errors))
		for _, e := range res.Errors {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
