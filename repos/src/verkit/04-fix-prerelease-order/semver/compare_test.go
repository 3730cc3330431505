package semver

import "testing"

func TestCompare(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{"equal", "1.2.3", "1.2.3", 0},
		{"major", "1.9.9", "2.0.0", -1},
		{"minor", "1.10.0", "1.9.0", 1},
		{"patch", "1.2.3", "1.2.4", -1},
		{"numbers_not_text", "1.2.10", "1.2.9", 1},
		{"pre-release_before_release", "1.0.0-rc.1", "1.0.0", -1},
		{"release_after_pre-release", "1.0.0", "1.0.0-alpha", 1},
		{"alphabetical_identifiers", "1.0.0-alpha", "1.0.0-beta", -1},
		{"more_identifiers_win", "1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"same_pre-release", "1.0.0-rc.1", "1.0.0-rc.1", 0},
		{"build_ignored", "1.0.0+a", "1.0.0+b", 0},
		{"build_ignored_with_pre-release", "1.0.0-rc.1+x", "1.0.0-rc.1", 0},
		{"pre-release_of_higher_version", "1.0.1-alpha", "1.0.0", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := MustParse(tc.a), MustParse(tc.b)
			if got := Compare(a, b); got != tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := Compare(b, a); got != -tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

func TestLessAndEqual(t *testing.T) {
	a, b := MustParse("1.4.0-beta"), MustParse("1.4.0")
	if !a.Less(b) || b.Less(a) {
		t.Errorf("%s should be less than %s", a, b)
	}
	if !MustParse("2.0.0+linux").Equal(MustParse("2.0.0+darwin")) {
		t.Error("versions differing only in build metadata should be Equal")
	}
	if a.Equal(b) {
		t.Errorf("%s and %s should not be Equal", a, b)
	}
}

func TestIsPrerelease(t *testing.T) {
	if !MustParse("1.0.0-0").IsPrerelease() {
		t.Error("1.0.0-0 is a pre-release")
	}
	if MustParse("1.0.0+build").IsPrerelease() {
		t.Error("1.0.0+build is not a pre-release")
	}
}

func TestComparePrecedenceChain(t *testing.T) {
	// The example order of section 11.4 of the specification.
	chain := []string{
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0",
	}
	for i := 0; i+1 < len(chain); i++ {
		a, b := MustParse(chain[i]), MustParse(chain[i+1])
		if !a.Less(b) || b.Less(a) {
			t.Errorf("want %s < %s", chain[i], chain[i+1])
		}
	}
}

func TestCompareNumericIdentifiers(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{"numeric_order", "1.0.0-rc.9", "1.0.0-rc.10", -1},
		{"first_identifier", "1.0.0-2", "1.0.0-10", -1},
		{"equal_numbers", "1.0.0-rc.10", "1.0.0-rc.10", 0},
		{"beyond_uint64", "1.0.0-99999999999999999999", "1.0.0-100000000000000000000", -1},
		{"numeric_below_alphanumeric", "1.0.0-1", "1.0.0-alpha", -1},
		{"numeric_below_hyphen", "1.0.0-999", "1.0.0--", -1},
		{"digits_inside_alphanumeric_are_text", "1.0.0-rc10", "1.0.0-rc9", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := MustParse(tc.a), MustParse(tc.b)
			if got := Compare(a, b); got != tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := Compare(b, a); got != -tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}
