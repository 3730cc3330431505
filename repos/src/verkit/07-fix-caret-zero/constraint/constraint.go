// Package constraint matches semantic versions against ranges such as
// ">=1.2.0 <2.0.0", "^1.4", "~2.1.3", "1.x" or "^1.2 || ^2.0".
package constraint

import (
	"fmt"
	"strconv"
	"strings"

	"example.org/verkit/semver"
)

// Constraint is a parsed range: alternatives separated by "||", each a list
// of comparators that must all match.
type Constraint struct {
	text string
	alts [][]comparator
}

// Error describes why a range cannot be parsed.
type Error struct {
	Input  string
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("constraint: %q: %s", e.Input, e.Reason) }

type op int

const (
	opEQ op = iota
	opNE
	opGT
	opGE
	opLT
	opLE
)

type comparator struct {
	op op
	v  semver.Version
}

func (c comparator) match(v semver.Version) bool {
	cmp := semver.Compare(v, c.v)
	switch c.op {
	case opEQ:
		return cmp == 0
	case opNE:
		return cmp != 0
	case opGT:
		return cmp > 0
	case opGE:
		return cmp >= 0
	case opLT:
		return cmp < 0
	default:
		return cmp <= 0
	}
}

// operators, longest first so that ">=" is not read as ">".
var operators = []string{">=", "<=", "!=", ">", "<", "=", "^", "~"}

// Parse parses a range. Alternatives are separated by "||"; within one,
// comparators are separated by spaces and an operator may be separated from
// its version by spaces too (">= 1.2.0").
func Parse(s string) (*Constraint, error) {
	c := &Constraint{}
	var texts []string
	for _, alt := range strings.Split(s, "||") {
		fields := strings.Fields(alt)
		if len(fields) == 0 {
			if strings.TrimSpace(s) == "" {
				return nil, &Error{s, "empty range"}
			}
			return nil, &Error{s, "empty alternative"}
		}
		var all []comparator
		for i := 0; i < len(fields); i++ {
			term := fields[i]
			if isOperator(term) {
				if i+1 == len(fields) {
					return nil, &Error{s, fmt.Sprintf("%q has no version", term)}
				}
				i++
				term += fields[i]
			}
			comps, err := parseTerm(term)
			if err != nil {
				return nil, &Error{s, err.Error()}
			}
			all = append(all, comps...)
		}
		c.alts = append(c.alts, all)
		texts = append(texts, strings.Join(fields, " "))
	}
	c.text = strings.Join(texts, " || ")
	return c, nil
}

// MustParse is like Parse but panics when s is not a valid range.
func MustParse(s string) *Constraint {
	c, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Check reports whether v satisfies the range: all comparators of at least
// one alternative match.
func (c *Constraint) Check(v semver.Version) bool {
	for _, all := range c.alts {
		if matchAll(all, v) {
			return true
		}
	}
	return false
}

// Filter returns the versions that satisfy the range, in their order.
func (c *Constraint) Filter(versions []semver.Version) []semver.Version {
	var out []semver.Version
	for _, v := range versions {
		if c.Check(v) {
			out = append(out, v)
		}
	}
	return out
}

func matchAll(all []comparator, v semver.Version) bool {
	for _, comp := range all {
		if !comp.match(v) {
			return false
		}
	}
	return true
}

// String returns the range as it was parsed, with runs of spaces collapsed.
func (c *Constraint) String() string { return c.text }

func isOperator(s string) bool {
	for _, o := range operators {
		if s == o {
			return true
		}
	}
	return false
}

// partial is a version that may lack its minor and patch numbers (or have
// wildcards there): n is how many leading numbers were given.
type partial struct {
	nums [3]uint64
	n    int
	pre  []string
}

func (p partial) lower() semver.Version {
	return semver.Version{Major: p.nums[0], Minor: p.nums[1], Patch: p.nums[2], Pre: p.pre}
}

// bump returns the lowest pre-release of the version after p at position i
// (0 major, 1 minor, 2 patch): bump(1.2.3, 1) is 1.3.0-0.
func (p partial) bump(i int) semver.Version {
	nums := p.nums
	nums[i]++
	for j := i + 1; j < 3; j++ {
		nums[j] = 0
	}
	return semver.Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: []string{"0"}}
}

func parsePartial(s string) (partial, error) {
	var p partial
	s = strings.TrimPrefix(s, "v")
	if s == "" {
		return p, fmt.Errorf("missing version")
	}
	if strings.ContainsAny(s, "-+") {
		v, err := semver.Parse(s)
		if err != nil {
			return p, err
		}
		return partial{nums: [3]uint64{v.Major, v.Minor, v.Patch}, n: 3, pre: v.Pre}, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return p, fmt.Errorf("%q has more than three numbers", s)
	}
	wild := false
	for i, part := range parts {
		if part == "x" || part == "X" || part == "*" {
			wild = true
			continue
		}
		if wild {
			return p, fmt.Errorf("%q has a number after a wildcard", s)
		}
		if part == "" || strings.Trim(part, "0123456789") != "" || len(part) > 1 && part[0] == '0' {
			return p, fmt.Errorf("%q is not a version", s)
		}
		n, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return p, fmt.Errorf("%q is too large", part)
		}
		p.nums[i] = n
		p.n = i + 1
	}
	return p, nil
}

func parseTerm(term string) ([]comparator, error) {
	o := ""
	for _, candidate := range operators {
		if strings.HasPrefix(term, candidate) {
			o = candidate
			break
		}
	}
	p, err := parsePartial(term[len(o):])
	if err != nil {
		return nil, err
	}
	full := p.n == 3
	switch o {
	case "", "=":
		if full {
			return []comparator{{opEQ, p.lower()}}, nil
		}
		return between(p, p.n-1), nil
	case "!=":
		if !full {
			return nil, fmt.Errorf("%q: != needs a full version", term)
		}
		return []comparator{{opNE, p.lower()}}, nil
	case ">":
		if full {
			return []comparator{{opGT, p.lower()}}, nil
		}
		if p.n == 0 {
			return nil, fmt.Errorf("%q matches no version", term)
		}
		return []comparator{{opGE, p.bump(p.n - 1)}}, nil
	case ">=":
		return []comparator{{opGE, p.lower()}}, nil
	case "<":
		if full {
			return []comparator{{opLT, p.lower()}}, nil
		}
		if p.n == 0 {
			return nil, fmt.Errorf("%q matches no version", term)
		}
		low := p.lower()
		low.Pre = []string{"0"}
		return []comparator{{opLT, low}}, nil
	case "<=":
		if full {
			return []comparator{{opLE, p.lower()}}, nil
		}
		if p.n == 0 {
			return []comparator{{opGE, semver.Version{}}}, nil
		}
		return []comparator{{opLT, p.bump(p.n - 1)}}, nil
	case "^":
		// Changes that do not modify the left-most non-zero number are
		// compatible: ^1.2.3 <2.0.0, ^0.2.3 <0.3.0, ^0.0.3 <0.0.4. A number
		// that was not given counts as non-zero: ^0.0 <0.1.0, ^0 <1.0.0.
		switch {
		case p.n == 0:
			return between(p, -1), nil
		case p.nums[0] > 0 || p.n == 1:
			return between(p, 0), nil
		case p.nums[1] > 0 || p.n == 2:
			return between(p, 1), nil
		default:
			return between(p, 2), nil
		}
	default: // "~"
		if p.n >= 2 {
			return between(p, 1), nil
		}
		return between(p, p.n-1), nil
	}
}

// between returns >=p.lower() <p.bump(i); with i < 0 (no number given) it
// matches every version.
func between(p partial, i int) []comparator {
	if i < 0 {
		return []comparator{{opGE, semver.Version{}}}
	}
	return []comparator{{opGE, p.lower()}, {opLT, p.bump(i)}}
}
