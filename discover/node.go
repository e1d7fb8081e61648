package discover

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func minePackageJSON(f *file) {
	var pkg struct {
		Name           string            `json:"name"`
		Engines        map[string]string `json:"engines"`
		PackageManager string            `json:"packageManager"`
		Scripts        map[string]string `json:"scripts"`
		Workspaces     json.RawMessage   `json:"workspaces"`
		Private        bool              `json:"private"`
		Volta          struct {
			Node string `json:"node"`
		} `json:"volta"`
	}
	if err := json.Unmarshal(f.data, &pkg); err != nil {
		line, msg := jsonError(f.data, err)
		f.fail(line, "%s", msg)
		return
	}
	lines, _ := jsonKeyLines(f.data)
	facts := map[string]string{
		"name": pkg.Name, "packageManager": pkg.PackageManager,
		"engines.node": pkg.Engines["node"], "engines.npm": pkg.Engines["npm"],
		"workspaces": strings.Join(workspaceGlobs(pkg.Workspaces), ","),
		"private":    strconv.FormatBool(pkg.Private),
	}
	if pkg.Volta.Node != "" {
		facts["volta.node"] = pkg.Volta.Node
	}
	line := lines["name"]
	f.add(KindPackageJSON, line, f.lineText(line), facts)
	names := make([]string, 0, len(pkg.Scripts))
	for n := range pkg.Scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l := lines["scripts."+n]
		f.add(KindPackageScript, l, f.lineText(l), map[string]string{"name": n, "command": pkg.Scripts[n]})
	}
}

// workspaceGlobs reads "workspaces" as an array or as {"packages": [...]}.
func workspaceGlobs(raw json.RawMessage) []string {
	var globs []string
	if json.Unmarshal(raw, &globs) == nil {
		return globs
	}
	var obj struct {
		Packages []string `json:"packages"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.Packages
}

var (
	npmLockRE  = regexp.MustCompile(`"lockfileVersion"\s*:\s*(\d+)`)
	yamlLockRE = regexp.MustCompile(`(?m)^lockfileVersion:\s*['"]?([0-9.]+)`)
	uvLockRE   = regexp.MustCompile(`(?m)^version\s*=\s*['"]?([0-9.]+)`)
	// Poetry's lock-version sits in [metadata] at the end; a bare "version ="
	// there is a package's, not the format's.
	poetryLockRE = regexp.MustCompile(`(?m)^lock-version\s*=\s*['"]?([0-9.]+)`)
)

// mineLockfile records a lockfile's manager and format from its head only.
func mineLockfile(f *file) {
	base := path.Base(f.path)
	facts := map[string]string{}
	line := 0
	find := func(re *regexp.Regexp) string {
		loc := re.FindSubmatchIndex(f.data)
		if loc == nil {
			return ""
		}
		line = lineAt(f.data, int64(loc[0]))
		return string(f.data[loc[2]:loc[3]])
	}
	kind := KindLockfile
	switch base {
	case "package-lock.json", "npm-shrinkwrap.json":
		facts["manager"], facts["format"] = "npm", find(npmLockRE)
	case "yarn.lock":
		facts["manager"], facts["format"] = "yarn", "1"
		// Berry lockfiles are YAML with a __metadata block; classic ones are not.
		if bytes.Contains(f.data, []byte("__metadata:")) {
			facts["format"] = "berry"
		}
	case "pnpm-lock.yaml":
		facts["manager"], facts["format"] = "pnpm", find(yamlLockRE)
	case "bun.lock":
		facts["manager"], facts["format"] = "bun", "text"
	case "bun.lockb":
		facts["manager"], facts["format"] = "bun", "binary"
	case "poetry.lock", "uv.lock", "Pipfile.lock":
		kind = KindPyLock
		facts["manager"] = map[string]string{"poetry.lock": "poetry", "uv.lock": "uv", "Pipfile.lock": "pipenv"}[base]
		switch base {
		case "poetry.lock":
			facts["format"] = find(poetryLockRE)
		case "uv.lock":
			facts["format"] = find(uvLockRE)
		}
	}
	excerpt := base
	if line > 0 {
		excerpt = f.lineText(line)
	}
	f.add(kind, line, excerpt, facts)
}
