package main

import (
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// shellCmd starts bash where the image has it, as the replay's steps run:
// interactive on a terminal, else reading commands from standard input.
func shellCmd(tty bool) []string {
	i := map[bool]string{true: " -i", false: ""}[tty]
	return []string{"sh", "-c", "command -v bash >/dev/null && exec bash" + i + " || exec sh" + i}
}

func newShell() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "shell [flags]",
		Short: "Open a shell in the environment the contract verifies",
		Long: `shell is the interactive form of exec: a shell in the environment the
contract verifies (the same kept environment, the working tree copied over
it, the network off unless the stage has it or --network asks). On a
terminal it gets one; otherwise it reads commands from standard input. A
terminal takes no --secret, which it would echo.`,
		Example: `  bootstrap shell
  bootstrap shell --stage fetch --network
  echo 'go env GOPATH' | bootstrap shell`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fd := int(os.Stdin.Fd())
			tty := cmd.InOrStdin() == os.Stdin && term.IsTerminal(fd)
			if tty {
				old, err := term.MakeRaw(fd)
				if err != nil {
					return err
				}
				defer term.Restore(fd, old)
			}
			return f.exec(cmd, shellCmd(tty), cmd.InOrStdin(), tty)
		},
	}
	f.register(cmd)
	return cmd
}
