package replay

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/repo"
)

// The use ledger: one file per shared image or volume under cacheDir/used,
// whose mtime is when a run last used it and whose lines are the digests of
// the contracts that did (the most recent maxUsers). The engine keeps
// neither; eviction reads both (package cache).
const (
	usedDir  = "used"
	maxUsers = 32
)

// Use is what the ledger says of one entry.
type Use struct {
	Last      time.Time
	Contracts []string
}

var ledgerName = strings.NewReplacer("/", "%2F", ":", "%3A", "%", "%25")

// touch records that the contract with digest d used each of names now.
// The ledger is advice for eviction: a lost write costs an early eviction,
// never a verdict, so errors are not the run's.
func touch(cacheDir, d string, names []string) {
	if cacheDir == "" {
		return
	}
	for _, n := range names {
		p := filepath.Join(cacheDir, usedDir, ledgerName.Replace(n))
		users := readUsers(p)
		users = slices.DeleteFunc(users, func(u string) bool { return u == d })
		users = append(users, d)
		if len(users) > maxUsers {
			users = users[len(users)-maxUsers:]
		}
		_ = contract.WriteFileAtomic(p, []byte(strings.Join(users, "\n")+"\n"))
	}
}

func readUsers(p string) []string {
	b, err := repo.ReadBounded(p, 64<<10)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Uses reads the ledger of cacheDir: by image or volume name.
func Uses(cacheDir string) (map[string]Use, error) {
	dir := filepath.Join(cacheDir, usedDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Use{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Use{}
	unescape := strings.NewReplacer("%2F", "/", "%3A", ":", "%25", "%")
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		out[unescape.Replace(e.Name())] = Use{Last: info.ModTime(), Contracts: readUsers(filepath.Join(dir, e.Name()))}
	}
	return out, nil
}

// Forget drops the ledger's entry of name, once it is removed.
func Forget(cacheDir, name string) {
	_ = os.Remove(filepath.Join(cacheDir, usedDir, ledgerName.Replace(name)))
}
