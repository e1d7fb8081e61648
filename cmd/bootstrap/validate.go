package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/contract"
)

func newValidate() *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE | PATH]",
		Short: "Check a contract offline: schema, evidence, pins",
		Long: `validate loads a contract and checks it as verify would before replaying
it, with no engine and no network: FILE, or PATH/.bootstrap/contract.yaml
(PATH default "."). It exits 0 for a valid contract, saying which pins
verify has yet to add, and 1 with every error (file:line: field: why)
for an invalid one.`,
		Example: `  bootstrap validate
  bootstrap validate path/to/repo
  bootstrap validate draft.yaml`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			file := pathArg(args)
			if fi, err := os.Stat(file); err == nil && fi.IsDir() {
				file = filepath.Join(file, contract.Dir, contract.File)
			}
			c, err := contract.Load(file)
			var invalid *contract.Error
			if errors.As(err, &invalid) {
				return &failure{err.Error()}
			} else if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: valid (%d stages, %d steps)\n", file, len(c.Stages), stepCount(c))
			if c.Base.Digest == "" {
				fmt.Fprintln(w, "not pinned yet: the base image's digest ('bootstrap verify' adds it)")
			}
			for _, t := range c.Toolchains {
				if t.Hash == "" {
					fmt.Fprintf(w, "not pinned yet: toolchain %s %s ('bootstrap verify' adds its hash)\n", t.Name, t.Version)
				}
			}
			return nil
		},
	}
}
