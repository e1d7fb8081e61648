package export

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// devcontainerJSON is the part of the Dev Container specification
// (containers.dev, devcontainer.json reference) an export writes, in the
// order it writes it.
type devcontainerJSON struct {
	Name                 string            `json:"name"`
	Build                devcontainerBuild `json:"build"`
	WorkspaceFolder      string            `json:"workspaceFolder"`
	WorkspaceMount       string            `json:"workspaceMount"`
	ContainerUser        string            `json:"containerUser"`
	RemoteUser           string            `json:"remoteUser"`
	UpdateRemoteUserUID  bool              `json:"updateRemoteUserUID"`
	UpdateContentCommand string            `json:"updateContentCommand,omitempty"`
	PostCreateCommand    string            `json:"postCreateCommand,omitempty"`
	Customizations       map[string]any    `json:"customizations"`
}

type devcontainerBuild struct {
	Dockerfile string `json:"dockerfile"`
	Context    string `json:"context"`
}

// bootstrapCustomization is what devcontainer.json's tool-specific
// "customizations" carry for bootstrap: what the lifecycle does not run.
type bootstrapCustomization struct {
	Contract string `json:"contract"`
	// Verify is the strongest verification, run by hand (or an agent)
	// before calling work done; in a replay it ran with the network off.
	Verify string `json:"verify"`
}

func devcontainer(c *contract.Contract, digest string) ([]byte, error) {
	p := split(c)
	d := devcontainerJSON{
		Name:  "bootstrap contract " + short(digest),
		Build: devcontainerBuild{Dockerfile: "Dockerfile", Context: ".."},
		// The image's copy of the repository is where the setup ran; the
		// workspace is mounted over it, so paths are a replay's.
		WorkspaceFolder: srcDir,
		WorkspaceMount:  "source=${localWorkspaceFolder},target=" + srcDir + ",type=bind",
		ContainerUser:   c.User,
		RemoteUser:      c.User,
		// The caches the image holds belong to uid 1000, who filled them;
		// a changed uid could not write to them.
		UpdateRemoteUserUID: false,
		// The setup ran at build time; on new content it runs again, from
		// the caches, so new dependencies arrive.
		UpdateContentCommand: script(p.setup),
		PostCreateCommand:    script(p.build),
		Customizations:       map[string]any{"bootstrap": bootstrapCustomization{Contract: ".bootstrap/contract.yaml " + digest, Verify: script(p.verify)}},
	}
	return encodeJSON(d)
}

// cursorJSON is the part of Cursor's environment.json
// (cursor.com/schemas/environment.schema.json) an export writes.
type cursorJSON struct {
	Name    string      `json:"name"`
	User    string      `json:"user"`
	Build   cursorBuild `json:"build"`
	Install string      `json:"install,omitempty"`
}

type cursorBuild struct {
	Dockerfile string `json:"dockerfile"`
	Context    string `json:"context"`
}

// cursor: Cursor checks the repository out itself and runs install in it
// on every start (keeping the disk it leaves), so the setup and build
// stages are the install command, and the image holds no repository.
func cursor(c *contract.Contract, digest string) ([]byte, error) {
	p := split(c)
	return encodeJSON(cursorJSON{
		Name:    "bootstrap contract " + short(digest),
		User:    c.User,
		Build:   cursorBuild{Dockerfile: "Dockerfile", Context: "."},
		Install: script(append(p.setup, p.build...)),
	})
}

func short(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	return d[:min(12, len(d))]
}

func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
