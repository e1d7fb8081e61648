package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/replay"
	"github.com/bootstrap-dev/bootstrap/replay/base"
)

func newImage() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Manage the base image contracts start from",
		Args:  noSubcommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBuildBase())
	return cmd
}

func newBuildBase() *cobra.Command {
	var opts base.Options
	var ifAbsent bool
	cmd := &cobra.Command{
		Use:   "build-base [--ref REF] [--mirror URL] [--if-absent]",
		Short: "Build the default base image offline from Debian packages and print its digest",
		Long: `build-base builds the base image without a registry: debootstrap (minbase) from
the Debian mirror the host's apt sources name, scrubbed of what varies between
builds, loaded into the engine as REF (default ` + base.DefaultRef + `). It
prints the image digest to pin in contracts: the same Debian archive gives
the same digest on every machine. Where a registry is reachable,
contracts can name any image by reference and digest instead.`,
		Example: `  bootstrap image build-base
  bootstrap image build-base --if-absent`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := newEngine(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			ref := opts.Ref
			if ref == "" {
				ref = base.DefaultRef
			}
			if ifAbsent {
				info, err := e.InspectImage(cmd.Context(), ref)
				switch {
				case err == nil && base.Current(info, opts):
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s (present)\n", ref, info.ID)
					return nil
				case err == nil:
					// Built by another bootstrap, or another way: what this
					// one would build differs, so it builds it.
					fmt.Fprintf(cmd.ErrOrStderr(), "%s is present but built as %q, not %q: building it again\n", ref, orUnlabelled(info.Labels[base.LabelRecipe]), base.Recipe(opts))
				case !errors.Is(err, replay.ErrNotFound):
					return err
				}
			}
			if isTerminal(cmd.ErrOrStderr()) {
				opts.Log = cmd.ErrOrStderr()
			}
			res, err := base.Build(cmd.Context(), e, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", res.Ref, res.Image.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Ref, "ref", "", "tag the image with this reference (default "+base.DefaultRef+")")
	cmd.Flags().StringVar(&opts.Mirror, "mirror", "", "Debian archive URL (default: from the host's apt sources)")
	cmd.Flags().BoolVar(&ifAbsent, "if-absent", false, "do nothing when the image is already present, built as this bootstrap builds it")
	return cmd
}

func orUnlabelled(recipe string) string {
	if recipe == "" {
		return "(no recipe label)"
	}
	return recipe
}
