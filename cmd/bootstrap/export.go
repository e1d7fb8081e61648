package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/export"
)

func newExport() *cobra.Command {
	var format string
	var names []string
	for _, f := range export.Formats {
		names = append(names, string(f))
	}
	cmd := &cobra.Command{
		Use:   "export --format F [PATH]",
		Short: "Write the contract in a format another tool loads: AGENTS.md, Copilot, dev container, Cursor",
		Long: `export renders PATH/.bootstrap/contract.yaml (PATH default ".") for a tool that
sets up a repository its own way, and writes it into the repository:

  agents-md     a marked block in AGENTS.md; only the block is replaced,
                the rest of the file is kept
  copilot       .github/workflows/copilot-setup-steps.yml
  devcontainer  .devcontainer/devcontainer.json and .devcontainer/Dockerfile
  cursor        .cursor/environment.json and .cursor/Dockerfile

The output is a function of the contract alone: exporting again writes
nothing. Toolchains are installed with the contract's hashes checked, so
they must be pinned ('bootstrap verify' pins them). What each format cannot
carry is in docs/export.md. Nothing is written through a symbolic link.`,
		Example: `  bootstrap export --format agents-md
  bootstrap export --format devcontainer path/to/repo
  docker build --network host -f .devcontainer/Dockerfile .`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(names, format) {
				return &usageError{fmt.Errorf("--format %q: want one of %s", format, strings.Join(names, ", "))}
			}
			written, notes, err := export.Run(pathArg(args), export.Format(format))
			for _, w := range written {
				state := "wrote"
				if !w.Changed {
					state = "unchanged"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", state, w.Path)
			}
			if err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "what to write: "+strings.Join(names, ", "))
	return cmd
}
