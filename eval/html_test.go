package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var sample = &Report{Total: 4, Verified: 2, MedianRatio: 1.3, Rows: []Row{
	{Source: "/c/alpha", Verified: true, Attempts: 1, Seconds: 68.2, Ecosystem: "go", BareSeconds: 62},
	{Source: "/c/beta<script>alert(1)</script>", Attempts: 4, Seconds: 905, Ecosystem: "go", Class: "missing-command"},
	{Source: "/c/gamma", Verified: true, Attempts: 2, Seconds: 91, Ecosystem: "node", BareSeconds: 65},
	{Source: "/c/delta", Attempts: 0, Seconds: 3, Error: "synth exited with exit status 3"},
}}

func TestHTMLIsSelfContainedAndDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := sample.WriteHTML(&a); err != nil {
		t.Fatal(err)
	}
	if err := sample.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renderings of one report differ")
	}
	page := a.String()
	for _, bad := range []string{"<script", "http://", "https://", "src=", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must need nothing outside itself (and escape what a repository's name holds)", bad)
		}
	}
}

// TestHTMLInABrowser opens the report in headless Chromium through
// chromedriver and reads, from the DOM, each plot's drawn size and each
// bar's height and value, against the report's numbers: a blank or
// unstyled page fails it.
func TestHTMLInABrowser(t *testing.T) {
	driver, err := exec.LookPath("chromedriver")
	if err == nil {
		_, err = exec.LookPath("chromium")
	}
	if err != nil {
		if os.Getenv("BOOTSTRAP_REQUIRE_BROWSER") == "1" {
			t.Fatalf("chromium and chromedriver required (BOOTSTRAP_REQUIRE_BROWSER=1): %v", err)
		}
		t.Skipf("no chromium and chromedriver: %v", err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := sample.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	plots := inBrowser(t, driver, "file://"+file, `return Array.from(document.querySelectorAll('svg.plot')).map(s => {
		const r = s.getBoundingClientRect();
		return {name: s.dataset.plot, w: r.width, h: r.height, bars: Array.from(s.querySelectorAll('rect.bar')).map(b =>
			({label: b.dataset.label, value: Number(b.dataset.value), h: b.getBoundingClientRect().height, w: b.getBoundingClientRect().width}))};
	}).concat([{name: 'heading', bars: [{label: 'verified', value: Number(document.getElementById('verified').textContent)}, {label: 'total', value: Number(document.getElementById('total').textContent)}, {label: 'median', value: Number(document.getElementById('median-ratio').textContent)}]}]);`)
	want := map[string][]struct {
		label string
		value float64
	}{
		"ecosystems": {{"go", 50}, {"node", 100}, {"unknown", 0}},
		"seconds":    {{"1", 68.2}, {"2", 905}, {"3", 91}, {"4", 3}},
		"classes":    {{"error", 1}, {"missing-command", 1}},
		"replays":    {{"1", 1}, {"2", 4}, {"3", 2}, {"4", 0}},
		"ratio":      {{"1", 1.1}, {"3", 1.4}},
		"heading":    {{"verified", 2}, {"total", 4}, {"median", 1.3}},
	}
	if len(plots) != len(want) {
		t.Fatalf("plots drawn: %+v; want %d", plots, len(want))
	}
	for _, p := range plots {
		w, ok := want[p.Name]
		if !ok {
			t.Fatalf("an unexpected plot %q", p.Name)
		}
		if p.Name != "heading" && (p.W <= 0 || p.H <= 0) {
			t.Errorf("plot %s drawn at %vx%v", p.Name, p.W, p.H)
		}
		if len(p.Bars) != len(w) {
			t.Fatalf("plot %s: bars %+v, want %v", p.Name, p.Bars, w)
		}
		for i, b := range p.Bars {
			if b.Label != w[i].label || b.Value != w[i].value {
				t.Errorf("plot %s bar %d: %s=%v, want %s=%v", p.Name, i, b.Label, b.Value, w[i].label, w[i].value)
			}
			if p.Name != "heading" && b.Value > 0 && (b.H <= 0 || b.W <= 0) {
				t.Errorf("plot %s bar %s: value %v drawn %vx%v", p.Name, b.Label, b.Value, b.W, b.H)
			}
		}
	}
}

type drawnPlot struct {
	Name string  `json:"name"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
	Bars []struct {
		Label string  `json:"label"`
		Value float64 `json:"value"`
		H     float64 `json:"h"`
		W     float64 `json:"w"`
	} `json:"bars"`
}

// inBrowser loads url in a headless Chromium session of chromedriver's
// (the W3C WebDriver protocol over loopback HTTP) and returns what script
// returns.
func inBrowser(t *testing.T, driver, url, script string) []drawnPlot {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(driver, fmt.Sprintf("--port=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	call := func(method, path string, body any, out any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s: %s", method, path, resp.Status, b)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, b)
			}
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/status"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("chromedriver did not answer")
		}
	}
	var session struct {
		Value struct {
			SessionID string `json:"sessionId"`
		} `json:"value"`
	}
	call("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"goog:chromeOptions": map[string]any{"binary": "/usr/bin/chromium", "args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--window-size=1400,1000"}},
	}}}, &session)
	id := session.Value.SessionID
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", base+"/session/"+id, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	call("POST", "/session/"+id+"/url", map[string]string{"url": url}, nil)
	var result struct {
		Value []drawnPlot `json:"value"`
	}
	call("POST", "/session/"+id+"/execute/sync", map[string]any{"script": script, "args": []any{}}, &result)
	return result.Value
}
