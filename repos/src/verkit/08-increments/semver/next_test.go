package semver

import "testing"

func TestNext(t *testing.T) {
	tests := []struct {
		in                  string
		major, minor, patch string
	}{
		{"1.2.3", "2.0.0", "1.3.0", "1.2.4"},
		{"0.0.0", "1.0.0", "0.1.0", "0.0.1"},
		{"1.2.3+build.9", "2.0.0", "1.3.0", "1.2.4"},
		{"1.2.3-rc.1", "2.0.0", "1.3.0", "1.2.3"},
		{"1.3.0-beta", "2.0.0", "1.3.0", "1.3.0"},
		{"2.0.0-rc.2", "2.0.0", "2.0.0", "2.0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			v := MustParse(tc.in)
			if got := v.NextMajor().String(); got != tc.major {
				t.Errorf("NextMajor = %s, want %s", got, tc.major)
			}
			if got := v.NextMinor().String(); got != tc.minor {
				t.Errorf("NextMinor = %s, want %s", got, tc.minor)
			}
			if got := v.NextPatch().String(); got != tc.patch {
				t.Errorf("NextPatch = %s, want %s", got, tc.patch)
			}
		})
	}
}
