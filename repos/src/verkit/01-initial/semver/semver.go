// Package semver parses, formats and compares semantic versions as defined by
// Semantic Versioning 2.0.0 (https://semver.org/spec/v2.0.0.html).
package semver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed semantic version. The zero value is 0.0.0.
type Version struct {
	Major, Minor, Patch uint64
	// Pre holds the pre-release identifiers in order: ["rc", "1"] for 1.0.0-rc.1.
	Pre []string
	// Build holds the build metadata identifiers; they never affect precedence.
	Build []string
}

// ErrSyntax is what every error returned by Parse unwraps to.
var ErrSyntax = errors.New("invalid semantic version")

// ParseError describes why an input is not a semantic version.
type ParseError struct {
	Input  string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("semver: %q: %s", e.Input, e.Reason)
}

func (e *ParseError) Unwrap() error { return ErrSyntax }

var fieldNames = [3]string{"major", "minor", "patch"}

// Parse parses a semantic version. A leading "v" is accepted and dropped.
func Parse(s string) (Version, error) {
	input := s
	s = strings.TrimPrefix(s, "v")
	var v Version
	if i := strings.IndexByte(s, '+'); i >= 0 {
		ids, err := identifiers(s[i+1:], false)
		if err != nil {
			return Version{}, &ParseError{input, "build metadata: " + err.Error()}
		}
		v.Build = ids
		s = s[:i]
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		ids, err := identifiers(s[i+1:], true)
		if err != nil {
			return Version{}, &ParseError{input, "pre-release: " + err.Error()}
		}
		v.Pre = ids
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, &ParseError{input, "want MAJOR.MINOR.PATCH"}
	}
	fields := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, part := range parts {
		n, err := number(part)
		if err != nil {
			return Version{}, &ParseError{input, fieldNames[i] + " version: " + err.Error()}
		}
		*fields[i] = n
	}
	return v, nil
}

// MustParse is like Parse but panics on an invalid version. It is meant for
// constants in programs and tests.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String formats the version in its canonical form, without a leading "v".
func (v Version) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		b.WriteByte('-')
		b.WriteString(strings.Join(v.Pre, "."))
	}
	if len(v.Build) > 0 {
		b.WriteByte('+')
		b.WriteString(strings.Join(v.Build, "."))
	}
	return b.String()
}

func number(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if !isNumeric(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%q has a leading zero", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n, nil
}

func identifiers(s string, pre bool) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	ids := strings.Split(s, ".")
	for _, id := range ids {
		if id == "" {
			return nil, errors.New("empty identifier")
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return nil, fmt.Errorf("invalid character %q in %q", c, id)
			}
		}
		if pre && len(id) > 1 && id[0] == '0' && isNumeric(id) {
			return nil, fmt.Errorf("%q has a leading zero", id)
		}
	}
	return ids, nil
}

func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
