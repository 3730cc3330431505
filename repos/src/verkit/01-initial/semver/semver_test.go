package semver

import (
	"errors"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Version
	}{
		{"plain", "1.2.3", Version{Major: 1, Minor: 2, Patch: 3}},
		{"zero", "0.0.0", Version{}},
		{"leading_v", "v2.10.0", Version{Major: 2, Minor: 10}},
		{"pre-release", "1.0.0-rc.1", Version{Major: 1, Pre: []string{"rc", "1"}}},
		{"hyphen_in_identifier", "1.0.0-x-y.7", Version{Major: 1, Pre: []string{"x-y", "7"}}},
		{"build", "1.0.0+20240513.sha-5114f85", Version{Major: 1, Build: []string{"20240513", "sha-5114f85"}}},
		{"pre-release_and_build", "3.1.4-beta.2+exp.sha.5", Version{Major: 3, Minor: 1, Patch: 4, Pre: []string{"beta", "2"}, Build: []string{"exp", "sha", "5"}}},
		{"build_may_have_leading_zeros", "1.0.0+001", Version{Major: 1, Build: []string{"001"}}},
		{"large", "18446744073709551615.0.0", Version{Major: 18446744073709551615}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q) failed: %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason string
	}{
		{"empty", "", "want MAJOR.MINOR.PATCH"},
		{"two_fields", "1.2", "want MAJOR.MINOR.PATCH"},
		{"four_fields", "1.2.3.4", "want MAJOR.MINOR.PATCH"},
		{"leading_zero", "01.2.3", `major version: "01" has a leading zero`},
		{"not_a_number", "1.x.3", `minor version: "x" is not a number`},
		{"empty_patch", "1.2.", "patch version: empty"},
		{"too_large", "1.2.18446744073709551616", `patch version: "18446744073709551616" is too large`},
		{"empty_pre-release", "1.2.3-", "pre-release: empty"},
		{"empty_identifier", "1.2.3-rc..1", "pre-release: empty identifier"},
		{"numeric_leading_zero", "1.2.3-rc.01", `pre-release: "01" has a leading zero`},
		{"bad_character", "1.2.3-rc_1", `pre-release: invalid character '_' in "rc_1"`},
		{"empty_build", "1.2.3+", "build metadata: empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", tc.in)
			}
			var perr *ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error %T is not a *ParseError", tc.in, err)
			}
			if perr.Reason != tc.reason {
				t.Errorf("Parse(%q) reason = %q, want %q", tc.in, perr.Reason, tc.reason)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("Parse(%q) error does not unwrap to ErrSyntax", tc.in)
			}
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{"0.0.0", "1.2.3", "1.0.0-alpha", "1.0.0-rc.1+build.5", "2.0.0+meta"} {
		if got := MustParse(in).String(); got != in {
			t.Errorf("MustParse(%q).String() = %q", in, got)
		}
	}
	if got := MustParse("v1.2.3").String(); got != "1.2.3" {
		t.Errorf("the leading v is not dropped: %q", got)
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of an invalid version did not panic")
		}
	}()
	MustParse("1.2")
}
