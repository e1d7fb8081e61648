package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/cache"
)

func newCache() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cache [--json]",
		Short: "List what bootstrap keeps between runs, with sizes and last use",
		Long: `cache lists everything bootstrap keeps between runs: dependency-cache,
toolchain and environment volumes, setup, run and base images (labelled as bootstrap's,
nothing else of the engine is touched), and under the cache directory the
verdict cache, downloaded toolchains, the Debian index and LLM responses: kind,
key, size, last use, the contracts that used it, and whether a live run holds
it. Replays keep the total under the budget (--cache-budget on verify, synth,
eval and exec, or BOOTSTRAP_CACHE_BUDGET; default ` + units.HumanSize(float64(defaultBudget)) + `), least recently used first.`,
		Example: `  bootstrap cache
  bootstrap cache prune --older-than 14d
  bootstrap cache prune --max-size 5GB`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := newEngine(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			dir, err := cacheDir()
			if err != nil {
				return err
			}
			entries, err := cache.List(cmd.Context(), e, dir)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			printEntries(cmd.OutOrStdout(), entries)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	cmd.AddCommand(newCachePrune())
	return cmd
}

func newCachePrune() *cobra.Command {
	var all bool
	var olderThan, maxSize string
	cmd := &cobra.Command{
		Use:   "prune [--all | --older-than D | --max-size S]",
		Short: "Remove cache entries no live run holds",
		Long: `prune removes entries that no live run holds and no container mounts: all of
them (--all), those last used longer ago than D (--older-than 36h, 14d), or,
least recently used first, enough to bring the total to S (--max-size 5GB).
Every entry is keyed by what decides its content, so a removal costs the next
run time, never its verdict. The base image is never removed: no registry
serves it again ('bootstrap image build-base' rebuilds it).`,
		Example: `  bootstrap cache prune --all
  bootstrap cache prune --older-than 14d --max-size 20GB`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := cache.Policy{All: all, Now: time.Now()}
			var err error
			if olderThan != "" {
				if p.OlderThan, err = parseAge(olderThan); err != nil {
					return &usageError{fmt.Errorf("--older-than %q: %w", olderThan, err)}
				}
			}
			if maxSize != "" {
				if p.MaxSize, err = units.FromHumanSize(maxSize); err != nil {
					return &usageError{fmt.Errorf("--max-size %q: %w", maxSize, err)}
				}
			}
			if !all && p.OlderThan == 0 && p.MaxSize == 0 {
				return &usageError{fmt.Errorf("prune needs --all, --older-than or --max-size")}
			}
			e, err := newEngine(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			dir, err := cacheDir()
			if err != nil {
				return err
			}
			removed, err := cache.Prune(cmd.Context(), e, dir, p)
			for _, r := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s %s (%s)\n", r.Kind, r.Key, units.HumanSize(float64(r.Size)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "freed %s in %d entries\n", units.HumanSize(float64(cache.Total(removed))), len(removed))
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry no live run holds")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "remove entries last used longer ago than this (36h, 14d)")
	cmd.Flags().StringVar(&maxSize, "max-size", "", "remove least recently used entries until the total is at most this (5GB)")
	return cmd
}

// parseAge is a Go duration, or a whole number of days ("14d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("want a duration such as 36h or 14d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a duration such as 36h or 14d")
	}
	return d, nil
}

func printEntries(w io.Writer, entries []cache.Entry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tKEY\tSIZE\tLAST USE\tCONTRACTS\tSTATE")
	for _, e := range entries {
		state := ""
		switch {
		case e.InUse:
			state = "in use"
		case e.Kept:
			state = "kept"
		}
		last := "-"
		if !e.LastUse.IsZero() {
			last = e.LastUse.UTC().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.Kind, e.Key, units.HumanSize(float64(e.Size)), last, len(e.Contracts), state)
	}
	tw.Flush()
	fmt.Fprintf(w, "total %s in %d entries\n", units.HumanSize(float64(cache.Total(entries))), len(entries))
}
