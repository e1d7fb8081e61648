package discover

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

func modError(f *file, err error) {
	var el modfile.ErrorList
	if errors.As(err, &el) && len(el) > 0 {
		f.fail(el[0].Pos.Line, "invalid %s: %s", f.path, el[0].Err)
		return
	}
	f.fail(0, "invalid %s: %v", f.path, err)
}

func mineGoMod(f *file) {
	mf, err := modfile.Parse(f.path, f.data, nil)
	if err != nil {
		modError(f, err)
		return
	}
	facts := map[string]string{}
	line := 0
	if mf.Module != nil {
		facts["module"] = mf.Module.Mod.Path
		line = mf.Module.Syntax.Start.Line
	}
	if mf.Go != nil {
		facts["go"] = mf.Go.Version
		facts["go_line"] = strconv.Itoa(mf.Go.Syntax.Start.Line)
	}
	if mf.Toolchain != nil {
		facts["toolchain"] = mf.Toolchain.Name
	}
	f.add(KindGoMod, line, f.lineText(line), facts)
}

func mineGoWork(f *file) {
	wf, err := modfile.ParseWork(f.path, f.data, nil)
	if err != nil {
		modError(f, err)
		return
	}
	facts := map[string]string{}
	line := 0
	if wf.Go != nil {
		facts["go"] = wf.Go.Version
		line = wf.Go.Syntax.Start.Line
	}
	if wf.Toolchain != nil {
		facts["toolchain"] = wf.Toolchain.Name
	}
	var use []string
	for _, u := range wf.Use {
		use = append(use, u.Path)
	}
	facts["use"] = strings.Join(use, ",")
	f.add(KindGoWork, line, f.lineText(line), facts)
}

// mineVersionFile reads the first meaningful line of .go-version, .nvmrc or .node-version.
func mineVersionFile(kind Kind) func(*file) {
	return func(f *file) {
		for i, l := range strings.Split(string(f.data), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			f.add(kind, i+1, l, map[string]string{"version": strings.Fields(l)[0]})
			return
		}
	}
}

// toolVersion is one line of .tool-versions.
type toolVersion struct {
	Line          int
	Tool, Version string
}

// parseToolVersions reads asdf's "tool version [fallback...] # comment" lines;
// only the first version counts, as asdf uses it.
func parseToolVersions(text string) []toolVersion {
	var out []toolVersion
	for i, l := range strings.Split(text, "\n") {
		if k := strings.IndexByte(l, '#'); k >= 0 {
			l = l[:k]
		}
		fs := strings.Fields(l)
		if len(fs) < 2 {
			continue
		}
		out = append(out, toolVersion{Line: i + 1, Tool: fs[0], Version: fs[1]})
	}
	return out
}

func mineToolVersions(f *file) {
	for _, tv := range parseToolVersions(string(f.data)) {
		f.add(KindToolVersions, tv.Line, f.lineText(tv.Line), map[string]string{"tool": tv.Tool, "version": tv.Version})
	}
}
