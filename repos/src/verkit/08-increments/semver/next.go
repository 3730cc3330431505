package semver

// NextMajor returns the next major release: 1.2.3 -> 2.0.0. A pre-release of
// a major release (2.0.0-rc.1) becomes that release.
func (v Version) NextMajor() Version {
	if v.IsPrerelease() && v.Minor == 0 && v.Patch == 0 {
		return Version{Major: v.Major}
	}
	return Version{Major: v.Major + 1}
}

// NextMinor returns the next minor release: 1.2.3 -> 1.3.0. A pre-release of
// a minor release (1.3.0-rc.1) becomes that release.
func (v Version) NextMinor() Version {
	if v.IsPrerelease() && v.Patch == 0 {
		return Version{Major: v.Major, Minor: v.Minor}
	}
	return Version{Major: v.Major, Minor: v.Minor + 1}
}

// NextPatch returns the next patch release: 1.2.3 -> 1.2.4. A pre-release
// (1.2.4-rc.1) becomes its release.
func (v Version) NextPatch() Version {
	if v.IsPrerelease() {
		return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
	}
	return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}
}
