package results

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name   string       `xml:"name,attr"`
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"` // some writers nest suites
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure"`
	Error     *junitMessage `xml:"error"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// ParseJUnit reads a JUnit XML report: a <testsuites> document or a single
// <testsuite>. A malformed document is an error naming the line.
func ParseJUnit(r io.Reader) (Report, error) {
	dec := xml.NewDecoder(r)
	var rep Report
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := dec.InputPos()
			return Report{}, fmt.Errorf("reading JUnit XML: line %d: %w", line, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		var suites []junitSuite
		switch se.Name.Local {
		case "testsuites":
			var s junitSuites
			err = dec.DecodeElement(&s, &se)
			suites = s.Suites
		case "testsuite":
			var s junitSuite
			err = dec.DecodeElement(&s, &se)
			suites = []junitSuite{s}
		default:
			continue
		}
		if err != nil {
			line, _ := dec.InputPos()
			return Report{}, fmt.Errorf("reading JUnit XML: line %d: %w", line, err)
		}
		for _, s := range suites {
			rep.Tests = append(rep.Tests, junitTests(s)...)
		}
		rep.Format = "junit"
	}
	if rep.Format == "" {
		return Report{}, errors.New("reading JUnit XML: no <testsuites> or <testsuite> element")
	}
	rep.count()
	return rep, nil
}

func junitTests(s junitSuite) []Test {
	var out []Test
	for _, c := range s.Cases {
		pkg := c.ClassName
		if pkg == "" {
			pkg = s.Name
		}
		t := Test{Package: pkg, Name: c.Name, Status: Passed}
		switch {
		case c.Failure != nil || c.Error != nil:
			m := c.Failure
			if m == nil {
				m = c.Error
			}
			t.Status = Failed
			t.Output = trimOutput(strings.TrimSpace(m.Message + "\n" + m.Text))
		case c.Skipped != nil:
			t.Status = Skipped
		}
		out = append(out, t)
	}
	for _, n := range s.Suites {
		out = append(out, junitTests(n)...)
	}
	return out
}

// parseJUnitText finds JUnit XML documents printed in a log (some runners
// write the report to stdout) and reads each.
func parseJUnitText(lines []string) (Report, bool) {
	text := strings.Join(lines, "\n")
	var all Report
	found := false
	for {
		i := strings.Index(text, "<testsuite")
		if i < 0 {
			break
		}
		closing := "</testsuite>"
		if strings.HasPrefix(text[i:], "<testsuites") {
			closing = "</testsuites>"
		}
		j := strings.Index(text[i:], closing)
		if j < 0 {
			break
		}
		end := i + j + len(closing)
		if r, err := ParseJUnit(strings.NewReader(text[i:end])); err == nil {
			found = true
			all.Tests = append(all.Tests, r.Tests...)
		}
		text = text[end:]
	}
	all.count()
	return all, found
}
