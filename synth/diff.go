package synth

import (
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
)

// Diff shows the change from a to b as a line diff of their canonical
// encodings ("-" removed, "+" added, two lines of context).
func Diff(a, b *contract.Contract) string {
	x, _ := contract.Encode(a)
	y, _ := contract.Encode(b)
	return diffLines(strings.Split(strings.TrimSuffix(string(x), "\n"), "\n"), strings.Split(strings.TrimSuffix(string(y), "\n"), "\n"), 2)
}

// diffLines is a longest-common-subsequence diff; contracts are a few
// hundred lines at most, so the quadratic table is cheap.
func diffLines(a, b []string, context int) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, line{' ', a[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', b[j]})
			j++
		default:
			ops = append(ops, line{'-', a[i]})
			i++
		}
	}
	var out strings.Builder
	last := -1
	for k, o := range ops {
		if o.op == ' ' {
			near := false
			for d := -context; d <= context; d++ {
				if k+d >= 0 && k+d < len(ops) && ops[k+d].op != ' ' {
					near = true
				}
			}
			if !near {
				continue
			}
		}
		if last >= 0 && k > last+1 {
			out.WriteString("...\n")
		}
		out.WriteByte(o.op)
		out.WriteByte(' ')
		out.WriteString(o.text)
		out.WriteByte('\n')
		last = k
	}
	return out.String()
}
