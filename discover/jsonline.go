package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// jsonKeyLines maps every object key path ("scripts.test", "engines.node")
// to the line its key is on. Keys inside arrays are not indexed.
func jsonKeyLines(data []byte) (map[string]int, error) {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj    bool
		prefix string
		key    string // pending key in an object, "" when a key is expected next
		inArr  bool
	}
	var stack []frame
	line, last := 1, int64(0)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		// Count newlines incrementally so the whole scan stays linear.
		off := dec.InputOffset()
		line += bytes.Count(data[last:off], []byte{'\n'})
		last = off
		top := len(stack) - 1
		k, isStr := tok.(string)
		if isStr && top >= 0 && stack[top].obj && stack[top].key == "" {
			stack[top].key = k
			if !stack[top].inArr {
				out[stack[top].prefix+k] = line
			}
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			f := frame{obj: tok == json.Delim('{')}
			if top >= 0 {
				f.inArr = stack[top].inArr || !stack[top].obj
				if stack[top].obj {
					f.prefix = stack[top].prefix + stack[top].key + "."
				}
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			top--
		}
		// A value completes the pending key of the enclosing object.
		if top >= 0 && stack[top].obj {
			stack[top].key = ""
		}
	}
}

// jsonError turns a decoding error into a line and message.
func jsonError(data []byte, err error) (int, string) {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return lineAt(data, se.Offset), "invalid JSON: " + se.Error()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return lineAt(data, te.Offset), "invalid JSON: " + te.Error()
	}
	return 0, "invalid JSON: " + err.Error()
}

// stripJSONC blanks // and /* */ comments and trailing commas, keeping every
// offset and newline, so JSON-with-comments (devcontainer.json) decodes and
// line numbers still match the file.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	inStr := false
	lastComma := -1
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr, lastComma = true, -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			stop := len(out)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case strings.IndexByte(" \t\r\n", c) >= 0:
		default:
			lastComma = -1
		}
	}
	return out
}
