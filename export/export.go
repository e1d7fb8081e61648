package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Format is a kind of file an export writes.
type Format string

// The formats.
const (
	AgentsMD     Format = "agents-md"
	Copilot      Format = "copilot"
	Devcontainer Format = "devcontainer"
	Cursor       Format = "cursor"
)

// Formats lists every format, in the order help shows them.
var Formats = []Format{AgentsMD, Copilot, Devcontainer, Cursor}

// File is one file of an export: its path relative to the repository
// root, slash-separated, and its content.
type File struct {
	Path string
	Data []byte
}

// Input is what an export is a function of.
type Input struct {
	Contract *contract.Contract
	// Verified says the repository's record is a passing replay of this
	// very contract; the AGENTS.md block says so, or that it is not.
	Verified bool
	// LocalBase says the engine knows the base image by its ID alone (the
	// record's digest is the image's ID): FROM names it by that ID.
	LocalBase bool
	// AgentsMD is the repository's AGENTS.md as it is, nil when absent:
	// the agents-md block is merged into it.
	AgentsMD []byte
}

// Render returns the files of format f, each a function of in alone, and
// notes on what of this contract the format does not carry.
func Render(f Format, in Input) ([]File, []string, error) {
	c := in.Contract
	digest, err := contract.Digest(c)
	if err != nil {
		return nil, nil, err
	}
	var files []File
	add := func(p string, b []byte, err error) error {
		files = append(files, File{p, b})
		return err
	}
	switch f {
	case AgentsMD:
		merged, err := merge(in.AgentsMD, agentsBlock(c, in.Verified))
		err = add(AgentsFile, merged, err)
		return files, nil, err
	case Copilot:
		b, err := copilot(c, digest)
		err = add(CopilotWorkflow, b, err)
		return files, notes(f, c), err
	case Devcontainer:
		b, err := dockerfile(c, dockerfileOpts{format: string(f), dir: ".devcontainer", source: true, localBase: in.LocalBase})
		if err == nil {
			err = add(".devcontainer/Dockerfile", b, err)
		}
		if err == nil {
			b, err = devcontainer(c, digest)
			err = add(".devcontainer/devcontainer.json", b, err)
		}
		return files, notes(f, c), err
	case Cursor:
		b, err := dockerfile(c, dockerfileOpts{format: string(f), dir: ".", localBase: in.LocalBase})
		if err == nil {
			err = add(".cursor/Dockerfile", b, err)
		}
		if err == nil {
			b, err = cursor(c, digest)
			err = add(".cursor/environment.json", b, err)
		}
		return files, notes(f, c), err
	}
	return nil, nil, fmt.Errorf("unknown format %q (want agents-md, copilot, devcontainer or cursor)", f)
}

// notes names what of c the format leaves out; what no format carries
// (per-stage network, the record) is in docs/export.md.
func notes(f Format, c *contract.Contract) []string {
	var out []string
	if len(c.Services) > 0 && f != Copilot {
		out = append(out, "the contract's services are not started: a "+string(f)+" environment has no sidecar for them")
	}
	if len(c.Services) > 0 && f == Copilot {
		out = append(out, "the contract's services run from their images as GitHub service containers, not Debian's packages")
	}
	if len(c.Secrets) > 0 {
		out = append(out, "secrets are not carried: provide "+fmt.Sprint(c.Secrets)+" in the tool's own secret settings")
	}
	if len(c.Quarantine) > 0 {
		out = append(out, "the quarantine is not carried: only AGENTS.md lists the tests excused")
	}
	return out
}

// Written is a file an export wrote, or found already as it would write it.
type Written struct {
	Path    string
	Changed bool
}

// Run exports the contract of the repository at root in format f: it
// loads root/.bootstrap/contract.yaml and record.json, renders, and
// writes each file that differs. A second export of the same contract
// writes nothing.
func Run(root string, f Format) ([]Written, []string, error) {
	bdir, err := contract.OutDir(root)
	if err != nil {
		return nil, nil, err
	}
	c, err := contract.Load(filepath.Join(bdir, contract.File))
	if err != nil {
		return nil, nil, err
	}
	in := Input{Contract: c}
	if in.Verified, in.LocalBase, err = readRecord(bdir, c); err != nil {
		return nil, nil, err
	}
	if f == AgentsMD {
		if in.AgentsMD, err = current(root, AgentsFile); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", AgentsFile, err)
		}
	}
	files, notes, err := Render(f, in)
	if err != nil {
		return nil, nil, fmt.Errorf("exporting %s: %w", f, err)
	}
	// Every path is checked before anything is written, so a refusal
	// leaves the repository as it was.
	for _, file := range files {
		if _, err := check(root, file.Path); err != nil {
			return nil, nil, fmt.Errorf("writing %s: %w", file.Path, err)
		}
	}
	var out []Written
	for _, file := range files {
		changed, err := write(root, file.Path, file.Data)
		if err != nil {
			return out, notes, err
		}
		out = append(out, Written{file.Path, changed})
	}
	return out, notes, nil
}

// record is the part of record.json an export reads.
type record struct {
	Verdict        string `json:"verdict"`
	ContractDigest string `json:"contract_digest"`
	BaseImage      struct {
		Digest string `json:"digest"`
		ID     string `json:"id"`
	} `json:"base_image"`
}

// readRecord says whether bdir's record is a pass of c itself (a record
// of another contract verifies nothing about this one) and whether the
// base c pins is an image the engine knows by its ID alone. No record
// means neither.
func readRecord(bdir string, c *contract.Contract) (verified, local bool, err error) {
	file := filepath.Join(bdir, "record.json")
	fi, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if !fi.Mode().IsRegular() {
		return false, false, fmt.Errorf("%s is not a regular file", file)
	}
	fh, err := os.Open(file)
	if err != nil {
		return false, false, err
	}
	defer fh.Close()
	var r record
	if err := json.NewDecoder(io.LimitReader(fh, maxCurrent)).Decode(&r); err != nil {
		return false, false, fmt.Errorf("reading %s: %w", file, err)
	}
	digest, err := contract.Digest(c)
	if err != nil {
		return false, false, err
	}
	local = c.Base.Digest != "" && r.BaseImage.Digest == c.Base.Digest && r.BaseImage.ID == c.Base.Digest
	return r.Verdict == "pass" && r.ContractDigest == digest, local, nil
}
