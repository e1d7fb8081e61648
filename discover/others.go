package discover

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"gopkg.in/yaml.v3"
)

func parseTOML(f *file, v any) bool {
	if err := toml.Unmarshal(f.data, v); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			f.fail(row, "invalid TOML: %s", de.Error())
		} else {
			f.fail(0, "invalid TOML: %v", err)
		}
		return false
	}
	return true
}

// tomlTableLine is the line of "[name]", or 0.
func tomlTableLine(data []byte, name string) int {
	re := regexp.MustCompile(`(?m)^[ \t]*\[` + regexp.QuoteMeta(name) + `\]`)
	if loc := re.FindIndex(data); loc != nil {
		return lineAt(data, int64(loc[0]))
	}
	return 0
}

func minePyProject(f *file) {
	var doc struct {
		Project struct {
			Name           string `toml:"name"`
			RequiresPython string `toml:"requires-python"`
		} `toml:"project"`
		BuildSystem struct {
			Backend string `toml:"build-backend"`
		} `toml:"build-system"`
		Tool map[string]any `toml:"tool"`
	}
	if !parseTOML(f, &doc) {
		return
	}
	var tools []string
	for t := range doc.Tool {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	facts := map[string]string{"name": doc.Project.Name, "requires-python": doc.Project.RequiresPython,
		"build-backend": doc.BuildSystem.Backend, "tools": strings.Join(tools, ",")}
	if poetry, ok := doc.Tool["poetry"].(map[string]any); ok {
		if facts["name"] == "" {
			facts["name"], _ = poetry["name"].(string)
		}
		if deps, ok := poetry["dependencies"].(map[string]any); ok && facts["requires-python"] == "" {
			facts["requires-python"], _ = deps["python"].(string)
		}
	}
	line := tomlTableLine(f.data, "project")
	f.add(KindPyProject, line, f.lineText(line), facts)
}

// countRequirements counts requirement lines, leaving out comments, blank
// lines and pip options (-r, -e, --index-url ...).
func countRequirements(text string) int {
	n := 0
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		if k := strings.Index(l, " #"); k >= 0 {
			l = l[:k]
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "-") {
			continue
		}
		n++
	}
	return n
}

func mineRequirements(f *file) {
	f.add(KindPyRequirements, 0, path.Base(f.path), map[string]string{
		"file": path.Base(f.path), "count": itoa(countRequirements(string(f.data)))})
}

func minePipfile(f *file) {
	var doc struct {
		Requires struct {
			Python string `toml:"python_version"`
		} `toml:"requires"`
	}
	if !parseTOML(f, &doc) {
		return
	}
	line := tomlTableLine(f.data, "requires")
	f.add(KindPipfile, line, f.lineText(line), map[string]string{"python_version": doc.Requires.Python})
}

func mineCargo(f *file) {
	var doc struct {
		Package struct {
			Name        string `toml:"name"`
			Edition     any    `toml:"edition"`
			RustVersion any    `toml:"rust-version"`
		} `toml:"package"`
		Workspace map[string]any `toml:"workspace"`
	}
	if !parseTOML(f, &doc) {
		return
	}
	facts := map[string]string{"name": doc.Package.Name, "edition": str(doc.Package.Edition), "rust-version": str(doc.Package.RustVersion)}
	if doc.Workspace != nil {
		facts["workspace"] = "true"
	}
	line := tomlTableLine(f.data, "package")
	if line == 0 {
		line = tomlTableLine(f.data, "workspace")
	}
	f.add(KindCargo, line, f.lineText(line), facts)
}

// str renders a TOML value that may be a string or an inherited table ({workspace = true}).
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if m, ok := v.(map[string]any); ok && m["workspace"] == true {
		return "workspace"
	}
	return ""
}

func mineRustToolchain(f *file) {
	if path.Base(f.path) == "rust-toolchain" && !strings.Contains(string(f.data), "[toolchain]") {
		mineVersionFile(KindRustToolchain)(f)
		for i := range f.r.ev[f.n:] {
			e := &f.r.ev[f.n+i]
			e.Facts = map[string]string{"channel": e.Facts["version"]}
		}
		return
	}
	var doc struct {
		Toolchain struct {
			Channel string `toml:"channel"`
		} `toml:"toolchain"`
	}
	if !parseTOML(f, &doc) {
		return
	}
	line := tomlTableLine(f.data, "toolchain")
	f.add(KindRustToolchain, line, f.lineText(line), map[string]string{"channel": doc.Toolchain.Channel})
}

func mineMaven(f *file) {
	var pom struct {
		ArtifactID string `xml:"artifactId"`
		Props      struct {
			Release string `xml:"maven.compiler.release"`
			Source  string `xml:"maven.compiler.source"`
			Java    string `xml:"java.version"`
		} `xml:"properties"`
	}
	dec := xml.NewDecoder(strings.NewReader(string(f.data)))
	if err := dec.Decode(&pom); err != nil && err != io.EOF {
		var se *xml.SyntaxError
		line := 0
		if errors.As(err, &se) {
			line = se.Line
		}
		f.fail(line, "invalid XML: %v", err)
		return
	}
	java := pom.Props.Release
	if java == "" {
		java = pom.Props.Source
	}
	if java == "" {
		java = pom.Props.Java
	}
	f.add(KindMaven, 0, "pom.xml", map[string]string{"artifactId": pom.ArtifactID, "java": java})
}

func mineGradle(f *file) {
	wrapper := f.r.seen[path.Join(path.Dir(f.path), "gradlew")]
	f.add(KindGradle, 0, path.Base(f.path), map[string]string{"file": path.Base(f.path), "wrapper": boolStr(wrapper)})
}

var gemRubyRE = regexp.MustCompile(`(?m)^\s*ruby\s+['"]([^'"]+)['"]`)

func mineGemfile(f *file) {
	facts := map[string]string{"ruby": ""}
	line := 0
	if loc := gemRubyRE.FindSubmatchIndex(f.data); loc != nil {
		facts["ruby"] = string(f.data[loc[2]:loc[3]])
		line = lineAt(f.data, int64(loc[0]))
	}
	f.add(KindGemfile, line, f.lineText(line), facts)
}

var (
	cmakeMinRE     = regexp.MustCompile(`(?im)^\s*cmake_minimum_required\s*\(\s*VERSION\s+([0-9.]+)`)
	cmakeProjectRE = regexp.MustCompile(`(?im)^\s*project\s*\(\s*([A-Za-z0-9_.+-]+)`)
	mesonRE        = regexp.MustCompile(`(?m)^\s*project\s*\(\s*'([^']+)'`)
)

func mineCMake(f *file) {
	facts := map[string]string{}
	line := 0
	if m := cmakeMinRE.FindSubmatch(f.data); m != nil {
		facts["minimum"] = string(m[1])
	}
	if loc := cmakeProjectRE.FindSubmatchIndex(f.data); loc != nil {
		facts["project"] = string(f.data[loc[2]:loc[3]])
		line = lineAt(f.data, int64(loc[0]))
	}
	f.add(KindCMake, line, f.lineText(line), facts)
}

func mineConfigure(f *file) {
	f.add(KindConfigure, 0, path.Base(f.path), map[string]string{"file": path.Base(f.path)})
}

func mineMeson(f *file) {
	facts := map[string]string{}
	line := 0
	if loc := mesonRE.FindSubmatchIndex(f.data); loc != nil {
		facts["project"] = string(f.data[loc[2]:loc[3]])
		line = lineAt(f.data, int64(loc[0]))
	}
	f.add(KindMeson, line, f.lineText(line), facts)
}

// mineDockerfile reports each instruction, continuation lines joined.
func mineDockerfile(f *file) {
	lines := strings.Split(string(f.data), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		start := i + 1
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			l = strings.TrimSpace(strings.TrimSuffix(l, "\\")) + " " + next
		}
		instr, args, _ := strings.Cut(l, " ")
		f.add(KindDockerfile, start, f.lineText(start), map[string]string{
			"instruction": strings.ToUpper(instr), "args": strings.TrimSpace(args)})
	}
}

func mineDevcontainer(f *file) {
	data := stripJSONC(f.data)
	var dc struct {
		Image      string                     `json:"image"`
		PostCreate json.RawMessage            `json:"postCreateCommand"`
		Features   map[string]json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &dc); err != nil {
		line, msg := jsonError(data, err)
		f.fail(line, "%s", msg)
		return
	}
	var post string
	if json.Unmarshal(dc.PostCreate, &post) != nil && len(dc.PostCreate) > 0 {
		post = string(dc.PostCreate)
	}
	var feats []string
	for k := range dc.Features {
		feats = append(feats, k)
	}
	sort.Strings(feats)
	lines, _ := jsonKeyLines(data)
	line := lines["image"]
	f.add(KindDevcontainer, line, f.lineText(line), map[string]string{
		"image": dc.Image, "postCreateCommand": post, "features": strings.Join(feats, ",")})
}

func itoa(n int) string { return strconv.Itoa(n) }

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func mineCompose(f *file) {
	root := parseYAML(f)
	if root == nil {
		return
	}
	services, _ := get(root, "services")
	for _, kv := range pairs(services) {
		facts := map[string]string{"name": kv[0].Value, "image": scalar(kv[1], "image")}
		env, _ := get(kv[1], "environment")
		switch {
		case env != nil && env.Kind == yaml.MappingNode:
			for _, e := range pairs(env) {
				facts["env."+e[0].Value] = text(e[1])
			}
		case env != nil && env.Kind == yaml.SequenceNode:
			for _, n := range env.Content {
				if k, v, ok := strings.Cut(text(n), "="); ok {
					facts["env."+k] = v
				}
			}
		}
		if ports, _ := get(kv[1], "ports"); ports != nil && ports.Kind == yaml.SequenceNode {
			var list []string
			for _, n := range ports.Content {
				if n.Kind == yaml.ScalarNode {
					list = append(list, n.Value)
				}
			}
			facts["ports"] = strings.Join(list, ",")
		}
		f.add(KindComposeService, kv[0].Line, f.lineText(kv[0].Line), facts)
	}
}
