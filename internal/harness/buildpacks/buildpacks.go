// Package buildpacks holds cf-hnc's own Cloud Native Buildpacks, which stage the two kinds of
// Cloud Foundry app that need no language toolchain: static sites (cf-hnc/staticfile, like
// Cloud Foundry's staticfile_buildpack) and apps that bring their own executables and say how
// to start them in a Procfile (cf-hnc/procfile). They are real buildpacks of Buildpack API
// 0.10, run by the CNB lifecycle in kpack's build pods.
//
// One program, cmd/cnb-buildpack, is both bin/detect and bin/build of both buildpacks: it
// learns its phase from the name it was run by and its buildpack from the buildpack.toml next
// to its bin directory. The version is read there too and never compiled in, because the
// platform publishes the same program under several versions to test buildpack upgrades.
// BuildpackTOML renders that descriptor for whoever packages the buildpacks.
//
// The staticfile buildpack also carries cmd/staticfile-server, the web server of the apps it
// stages (see StaticFiles), and installs it into the app image.
package buildpacks

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"
)

const (
	// StaticfileID is the buildpack of apps with a Staticfile at their root.
	StaticfileID = "cf-hnc/staticfile"
	// ProcfileID is the buildpack of apps with a Procfile at their root.
	ProcfileID = "cf-hnc/procfile"

	// API is the Buildpack API whose contract Run follows.
	API = "0.10"
	// descriptorName is the buildpack's descriptor, at the root of its directory.
	descriptorName = "buildpack.toml"
)

// IDs are the ids of the buildpacks in Cloud Foundry's detection order: an app with both a
// Staticfile and a Procfile is a static site, as Cloud Foundry's staticfile_buildpack, first
// in its default order, claims it.
func IDs() []string {
	return []string{StaticfileID, ProcfileID}
}

// names are the buildpacks' display names, by id.
var names = map[string]string{
	StaticfileID: "cf-hnc Staticfile",
	ProcfileID:   "cf-hnc Procfile",
}

// descriptor is what buildpack.toml holds.
type descriptor struct {
	API       string            `toml:"api"`
	Buildpack descriptorInfo    `toml:"buildpack"`
	Stacks    []descriptorStack `toml:"stacks"`
}

type descriptorInfo struct {
	ID      string `toml:"id"`
	Version string `toml:"version"`
	Name    string `toml:"name"`
}

type descriptorStack struct {
	ID string `toml:"id"`
}

// BuildpackTOML is the buildpack.toml of the buildpack with id (one of IDs) at version.
func BuildpackTOML(id, version string) ([]byte, error) {
	if !slices.Contains(IDs(), id) {
		return nil, fmt.Errorf("unknown buildpack id %q", id)
	}
	if version == "" {
		return nil, fmt.Errorf("buildpack %s needs a version", id)
	}
	return encodeTOML(descriptor{
		API:       API,
		Buildpack: descriptorInfo{ID: id, Version: version, Name: names[id]},
		// Stack "*" is any stack; the lifecycle turns it into a target that matches every
		// build image (buildpack/bp_descriptor.go).
		Stacks: []descriptorStack{{ID: "*"}},
	})
}

// readDescriptor reads the buildpack.toml in dir and checks that it describes one of IDs.
func readDescriptor(dir string) (descriptorInfo, error) {
	path := filepath.Join(dir, descriptorName)
	var d descriptor
	if _, err := toml.DecodeFile(path, &d); err != nil {
		return descriptorInfo{}, err
	}
	switch {
	case d.API != API:
		return descriptorInfo{}, fmt.Errorf("%s: api is %q, want %q", path, d.API, API)
	case !slices.Contains(IDs(), d.Buildpack.ID):
		return descriptorInfo{}, fmt.Errorf("%s: unknown buildpack id %q", path, d.Buildpack.ID)
	case d.Buildpack.Version == "":
		return descriptorInfo{}, errors.New(path + ": the buildpack has no version")
	}
	return d.Buildpack, nil
}
