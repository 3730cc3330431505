package constraint

import (
	"testing"

	"example.org/verkit/semver"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		constraint string
		match      []string
		reject     []string
	}{
		{"exact", "1.2.3", []string{"1.2.3", "1.2.3+build"}, []string{"1.2.4", "1.2.3-rc.1"}},
		{"equals", "=v2.0.0", []string{"2.0.0"}, []string{"2.0.1"}},
		{"not_equal", "!=1.0.0", []string{"1.0.1", "0.9.0"}, []string{"1.0.0"}},
		{"greater", ">1.2.3", []string{"1.2.4", "2.0.0"}, []string{"1.2.3", "1.2.3-rc.1"}},
		{"greater_or_equal", ">=1.2.3", []string{"1.2.3", "1.3.0"}, []string{"1.2.2", "1.2.3-rc.1"}},
		{"less", "<2.0.0", []string{"1.99.99", "2.0.0-rc.1"}, []string{"2.0.0"}},
		{"less_or_equal", "<=1.0.0", []string{"1.0.0", "0.1.0"}, []string{"1.0.1"}},
		{"and", ">=1.2.0 <1.5.0", []string{"1.2.0", "1.4.9"}, []string{"1.1.9", "1.5.0"}},
		{"operator_apart", ">= 1.2.0  < 1.5.0", []string{"1.3.0"}, []string{"1.5.0"}},
		{"partial_minor", "1.2", []string{"1.2.0", "1.2.99"}, []string{"1.3.0", "1.1.9", "1.3.0-0"}},
		{"partial_major", "1", []string{"1.0.0", "1.99.0"}, []string{"2.0.0", "0.9.0"}},
		{"x_range", "1.x", []string{"1.4.0"}, []string{"2.0.0"}},
		{"x_patch", "1.2.X", []string{"1.2.7"}, []string{"1.3.0"}},
		{"star", "*", []string{"0.0.0", "9.9.9"}, nil},
		{"greater_partial", ">1.2", []string{"1.3.0"}, []string{"1.2.9"}},
		{"less_partial", "<1.2", []string{"1.1.9"}, []string{"1.2.0", "1.2.0-rc.1"}},
		{"less_or_equal_partial", "<=1.2", []string{"1.2.9"}, []string{"1.3.0"}},
		{"caret", "^1.2.3", []string{"1.2.3", "1.9.0"}, []string{"1.2.2", "2.0.0", "2.0.0-rc.1"}},
		{"caret_partial", "^1.2", []string{"1.2.0", "1.99.0"}, []string{"1.1.0", "2.0.0"}},
		{"caret_pre-release", "^2.1.0-beta.2", []string{"2.1.0-beta.2", "2.1.0-beta.11", "2.1.0", "2.5.0"}, []string{"2.1.0-beta.1", "3.0.0"}},
		{"tilde", "~1.2.3", []string{"1.2.3", "1.2.9"}, []string{"1.3.0", "1.2.2"}},
		{"tilde_minor", "~1.2", []string{"1.2.0"}, []string{"1.3.0"}},
		{"tilde_major", "~1", []string{"1.5.0"}, []string{"2.0.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.constraint)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.constraint, err)
			}
			for _, v := range tc.match {
				if !c.Check(semver.MustParse(v)) {
					t.Errorf("%q should match %s", tc.constraint, v)
				}
			}
			for _, v := range tc.reject {
				if c.Check(semver.MustParse(v)) {
					t.Errorf("%q should not match %s", tc.constraint, v)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", "  "},
		{"operator_only", ">="},
		{"bad_version", ">=1.2.3.4"},
		{"not_a_number", "~1.y"},
		{"number_after_wildcard", "1.x.3"},
		{"leading_zero", "01.2"},
		{"not_equal_partial", "!=1.2"},
		{"greater_than_anything", ">*"},
		{"bad_pre-release", "^1.2.3-rc..1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := Parse(tc.in); err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tc.in, c)
			} else if _, ok := err.(*Error); !ok {
				t.Errorf("Parse(%q) error is a %T, want *Error", tc.in, err)
			}
		})
	}
}

func TestString(t *testing.T) {
	if got := MustParse("  >=1.2.0   <2.0.0 ").String(); got != ">=1.2.0 <2.0.0" {
		t.Errorf("String() = %q", got)
	}
}
