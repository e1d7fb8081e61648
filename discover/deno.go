package discover

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// mineDenoConfig reads deno.json or deno.jsonc: the project and its tasks.
// A task is a command string, or an object whose "command" is one (Deno 2).
func mineDenoConfig(f *file) {
	data := stripJSONC(f.data)
	var cfg struct {
		Name           string                     `json:"name"`
		Tasks          map[string]json.RawMessage `json:"tasks"`
		NodeModulesDir json.RawMessage            `json:"nodeModulesDir"`
		Imports        map[string]string          `json:"imports"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		line, msg := jsonError(data, err)
		f.fail(line, "%s", msg)
		return
	}
	lines, _ := jsonKeyLines(data)
	names := slices.Sorted(maps.Keys(cfg.Tasks))
	line := 1
	if l, ok := lines["name"]; ok {
		line = l
	}
	f.add(KindDenoConfig, line, f.lineText(line), map[string]string{
		"name": cfg.Name, "tasks": strings.Join(names, ","),
		"nodeModulesDir": strings.Trim(string(cfg.NodeModulesDir), `"`),
		"imports":        strings.Join(slices.Sorted(maps.Keys(cfg.Imports)), ","),
	})
	for _, n := range names {
		var cmd string
		if json.Unmarshal(cfg.Tasks[n], &cmd) != nil {
			var obj struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(cfg.Tasks[n], &obj) != nil {
				continue
			}
			cmd = obj.Command
		}
		l := lines["tasks."+n]
		f.add(KindDenoTask, l, f.lineText(l), map[string]string{"name": n, "command": cmd})
	}
}

var denoLockRE = regexp.MustCompile(`"version"\s*:\s*"([^"]+)"`)

// mineDenoLock records deno.lock's format version from its head.
func mineDenoLock(f *file) {
	facts := map[string]string{}
	line := 0
	if loc := denoLockRE.FindSubmatchIndex(f.data); loc != nil {
		line = lineAt(f.data, int64(loc[0]))
		facts["version"] = string(f.data[loc[2]:loc[3]])
	}
	excerpt := "deno.lock"
	if line > 0 {
		excerpt = f.lineText(line)
	}
	f.add(KindDenoLock, line, excerpt, facts)
}
