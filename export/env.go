package export

import (
	"maps"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Paths a replay's steps see, which the exported environments keep so a
// command behaves as it did when it was verified.
const (
	srcDir   = "/work/src"
	cacheDir = "/cache"
	stdPath  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

func home(c *contract.Contract) string {
	if c.User == "root" {
		return "/root"
	}
	return "/home/" + c.User
}

// stepEnv is the environment a replay gives every step (replay's env,
// docs/contract.md "What a step sees") but for what is a property of one
// run rather than of the contract: SOURCE_DATE_EPOCH (the commit's time),
// the CA bundle's variables (set where a bundle is given) and the offline
// stages' GOPROXY, which puts the module cache first.
func stepEnv(c *contract.Contract) map[string]string {
	h := home(c)
	m := map[string]string{
		"HOME":              h,
		"USER":              c.User,
		"LOGNAME":           c.User,
		"SHELL":             "/bin/bash",
		"LANG":              "C.UTF-8",
		"TZ":                "UTC",
		"CI":                "true",
		"NPM_CONFIG_PREFIX": h + "/.local",
		"XDG_CACHE_HOME":    cacheDir + "/xdg",
		"GOMODCACHE":        cacheDir + "/go/mod",
		"npm_config_cache":  cacheDir + "/npm",
		// pnpm's store and yarn's cache are content-addressed, as in a replay.
		"npm_config_store_dir": cacheDir + "/pnpm",
		"YARN_CACHE_FOLDER":    cacheDir + "/yarn",
	}
	dirs, env := toolPath(c)
	maps.Copy(m, env)
	m["PATH"] = strings.Join(append(dirs, h+"/.local/bin", h+"/go/bin", stdPath), ":")
	maps.Copy(m, c.Env)
	return m
}

// toolPath is what the contract's toolchains put on PATH, in order, and
// in the environment.
func toolPath(c *contract.Contract) ([]string, map[string]string) {
	var dirs []string
	env := map[string]string{}
	for _, t := range c.Toolchains {
		d, e := layout(t.Name, toolRoot+"/"+t.Name)
		dirs = append(dirs, d...)
		maps.Copy(env, e)
	}
	return dirs, env
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
