package export

import (
	"bytes"
	"fmt"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/synth"
)

// AgentsFile is the repository's AGENTS.md, which the agents-md format
// merges its block into.
const AgentsFile = "AGENTS.md"

// The markers of the block the agents-md format owns. Only what lies
// between them is ever replaced; each must stand at the start of a line.
const (
	BeginMarker = "<!-- bootstrap:begin -->"
	EndMarker   = "<!-- bootstrap:end -->"
)

// agentsBlock is the marked block: the contract in plain words, as
// `bootstrap synth` writes .bootstrap/AGENTS.md.
func agentsBlock(c *contract.Contract, verified bool) []byte {
	var b bytes.Buffer
	b.WriteString(BeginMarker + "\n")
	b.WriteString("<!-- Written by `bootstrap export --format agents-md` from .bootstrap/contract.yaml; what lies between these markers is replaced on the next export, the rest of this file is yours. -->\n\n")
	b.Write(synth.AgentContext(c, verified))
	b.WriteString("\n" + EndMarker + "\n")
	return b.Bytes()
}

// merge puts block into current: in place of the marked block there, or
// appended after a blank line when there is none. A begin marker without
// an end after it is an error: what the block would end at is a guess.
func merge(current, block []byte) ([]byte, error) {
	begin := markerAt(current, BeginMarker, 0)
	if begin < 0 {
		out := bytes.Clone(current)
		if len(out) > 0 {
			if !bytes.HasSuffix(out, []byte("\n")) {
				out = append(out, '\n')
			}
			out = append(out, '\n')
		}
		return append(out, block...), nil
	}
	end := markerAt(current, EndMarker, begin)
	if end < 0 {
		return nil, fmt.Errorf("%s has %s at line %d but no %s after it: add the end marker where the block ends, or remove the begin marker", AgentsFile, BeginMarker, bytes.Count(current[:begin], []byte("\n"))+1, EndMarker)
	}
	end += len(EndMarker)
	if end < len(current) && current[end] == '\n' {
		end++
	}
	out := append(bytes.Clone(current[:begin]), block...)
	return append(out, current[end:]...), nil
}

// markerAt finds marker at the start of a line at or after from, or -1.
func markerAt(b []byte, marker string, from int) int {
	for i := from; i <= len(b); {
		j := bytes.Index(b[i:], []byte(marker))
		if j < 0 {
			return -1
		}
		if at := i + j; at == 0 || b[at-1] == '\n' {
			return at
		}
		i += j + 1
	}
	return -1
}
