package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/bootstrap-dev/bootstrap/mcpserver"
)

func newMCP() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "mcp [flags] [PATH]",
		Short: "Serve the contract to a coding agent over MCP on stdio",
		Long: `mcp is a Model Context Protocol server on stdin and stdout for the repository
at PATH (default "."), for an agent to load at startup. Tools: contract (the
toolchains, commands per stage, quarantine, verified commit and digest),
check (drift, as bootstrap check), run_stage (a cold replay on the working
tree up to a stage: verdict, per-test results, failure class and deciding
lines; the committed record is left alone), exec (a command in the
environment, as bootstrap exec) and test (the strongest stage's commands, or
one of the agent's own, in that environment; never a verdict of the
contract). Resources: bootstrap://contract.yaml and bootstrap://AGENTS.md.
The engine is reached when a tool first needs it.`,
		Example: `  bootstrap mcp
  claude mcp add bootstrap -- bootstrap mcp /path/to/repo`,
		Args: maxOnePath,
		RunE: func(cmd *cobra.Command, args []string) error {
			ca, err := f.bundle()
			if err != nil {
				return err
			}
			open := func(ctx context.Context) (mcpserver.Runner, error) {
				e, err := newEngine(ctx)
				if err != nil {
					return nil, err
				}
				// The engine lives as long as the server: the process ends with it.
				r, err := newRunner(cmd, &f, e)
				if err != nil {
					_ = e.Close()
				}
				return r, err
			}
			srv := mcpserver.New(pathArg(args), mcpserver.WithRunner(open), mcpserver.WithCABundle(ca), mcpserver.WithVersion(version))
			return srv.Run(cmd.Context(), &mcp.StdioTransport{})
		},
	}
	cmd.Flags().StringVar(&f.caBundle, "ca-bundle", "", "trust this CA bundle for TLS where the network is on (default: $SSL_CERT_FILE); recorded as an input")
	cmd.Flags().StringArrayVar(&f.secrets, "secret", nil, "pass the secret NAME the contract declares, as verify does (repeatable)")
	f.registerBudget(cmd)
	cmd.PreRunE = func(*cobra.Command, []string) error { _, err := f.grants(); return err }
	return cmd
}
