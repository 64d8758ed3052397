package buildpacks

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const (
	staticfileName = "Staticfile"
	// StaticfileServer is the web server of static sites, in the buildpack's bin directory.
	StaticfileServer = "staticfile-server"
	// serverLayer is the launch layer that holds the server; the launcher puts the bin
	// directory of every layer on PATH (env/launch.go).
	serverLayer = "server"
)

// buildStaticfile installs the server and serves the root that the Staticfile names.
func buildStaticfile(dirs buildDirs) ([]process, error) {
	content, err := os.ReadFile(filepath.Join(dirs.app, staticfileName))
	if err != nil {
		return nil, err
	}
	root, err := parseStaticfile(string(content))
	if err != nil {
		return nil, err
	}
	if err := checkRoot(dirs.app, root); err != nil {
		return nil, err
	}
	if err := installServer(dirs); err != nil {
		return nil, err
	}
	// The launcher starts every process in the app's directory (launch/launcher.go), where
	// the relative root resolves.
	return []process{{Type: "web", Command: []string{StaticfileServer, "-root", root}, Args: []string{}, Default: true}}, nil
}

// parseStaticfile returns the directory of the app to serve: the root option, cleaned, or
// else the app's root. Cloud Foundry's other options configure nginx features that the
// server lacks, so they fail the build rather than be ignored.
func parseStaticfile(content string) (string, error) {
	entries, err := parseEntries(staticfileName, content, "<option>: <value>")
	if err != nil {
		return "", err
	}
	root := ""
	for _, e := range entries {
		switch {
		case e.key != "root":
			return "", e.errorf("unknown option %q, only root is supported", e.key)
		case e.value == "":
			return "", e.errorf("root has no value")
		case root != "":
			return "", e.errorf("root is set twice")
		}
		root = e.value
	}
	if root == "" {
		return ".", nil
	}
	return filepath.Clean(root), nil
}

// checkRoot fails unless root is a directory of the app. os.Root also refuses absolute
// paths, ".." and symbolic links out of the app: what is served must be part of the app.
func checkRoot(appDir, root string) error {
	app, err := os.OpenRoot(appDir)
	if err != nil {
		return err
	}
	defer app.Close()
	if info, err := app.Stat(root); err != nil || !info.IsDir() {
		return fmt.Errorf("%s: root %q is not a directory of the app", staticfileName, root)
	}
	return nil
}

// installServer copies the server into a launch layer, as the buildpack's own directory is
// not part of the app image.
func installServer(dirs buildDirs) error {
	bin := filepath.Join(dirs.layers, serverLayer, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	if err := copyExecutable(filepath.Join(dirs.buildpack, "bin", StaticfileServer), filepath.Join(bin, StaticfileServer)); err != nil {
		return err
	}
	return writeTOML(filepath.Join(dirs.layers, serverLayer+".toml"), layerTOML{Types: layerTypes{Launch: true}})
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
