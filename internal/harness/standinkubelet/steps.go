package standinkubelet

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
)

// steps does the work of a build pod's containers against the registry.
type steps struct {
	registry registry
	failures *failures
}

// build does what a build pod's containers do.
func (s steps) build(ctx context.Context, p plan, creds credentials) outcome {
	in, failure := s.prepare(ctx, p, creds)
	if failure != nil {
		return *failure
	}

	// A kubelet pulls the builder image before it starts analyze, the first step to run in it.
	builder, _, err := s.registry.image(ctx, p.builderImage, creds.podPull)
	if err != nil {
		return imagePullFailed(kpackv1alpha2.AnalyzeContainerName, fmt.Errorf("failed to pull image %q: %w", p.builderImage, err))
	}

	found, err := detect(builder, in.files)
	if errors.Is(err, errNoGroup) {
		return failed(kpackv1alpha2.DetectContainerName, exitNoGroupDetected, err)
	} else if err != nil {
		return failed(kpackv1alpha2.DetectContainerName, exitFailed, err)
	}

	if message, ok := s.failures.of(p.namespace, p.labels); ok {
		return failed(kpackv1alpha2.BuildContainerName, exitBuildpackFailed, errors.New(message))
	}
	procs, err := processes(in.procfile, found.buildpacks)
	if err != nil {
		return failed(kpackv1alpha2.BuildContainerName, exitBuildpackFailed, err)
	}

	built, err := s.export(ctx, p, creds, export{
		run:            in.run,
		runImage:       p.runImage,
		app:            in.app,
		detected:       found,
		processes:      procs,
		defaultProcess: p.defaultProcess,
		platformAPI:    p.platformAPI,
		source:         in.source,
	})
	if err != nil {
		return failed(kpackv1alpha2.ExportContainerName, exitExportFailed, err)
	}
	return s.complete(ctx, p, built, creds)
}

// prepared is what build-init leaves for the lifecycle.
type prepared struct {
	run      v1.Image
	source   name.Digest
	app      v1.Layer
	procfile []byte
	// files are the names at the app's root.
	files []string
}

// prepare does what kpack's build-init does: it checks access and fetches the source.
func (s steps) prepare(ctx context.Context, p plan, creds credentials) (prepared, *outcome) {
	fail := func(err error) (prepared, *outcome) {
		o := failed(kpackv1alpha2.PrepareContainerName, exitFailed, err)
		return prepared{}, &o
	}
	if err := s.registry.checkPush(p.tags[0], creds.serviceAccount); err != nil {
		return fail(fmt.Errorf("Error verifying write access to %q: %w", p.tags[0], err))
	}
	run, _, err := s.registry.image(ctx, p.runImage, creds.build())
	if err != nil {
		return fail(fmt.Errorf("Error verifying read access to run image %q: %w", p.runImage, err))
	}
	if p.source == "" {
		return fail(errors.New("the stand-in kubelet simulates registry image sources only"))
	}
	source, sourceRef, err := s.registry.image(ctx, p.source, creds.source())
	if err != nil {
		return fail(fmt.Errorf("pulling %s: %w", p.source, err))
	}
	app, procfile, files, err := appLayer(source, p.sourceSubPath)
	if err != nil {
		return fail(err)
	}
	return prepared{run: run, source: sourceRef, app: app, procfile: procfile, files: files}, nil
}

// export does what the lifecycle's exporter does: it pushes the app image to every tag and,
// for a Build with a registry cache, the cache image.
func (s steps) export(ctx context.Context, p plan, creds credentials, e export) (name.Digest, error) {
	img, err := e.image()
	if err != nil {
		return name.Digest{}, err
	}
	built, err := s.registry.push(ctx, img, p.tags, creds.build())
	if err != nil {
		return name.Digest{}, err
	}
	if p.cacheImage != "" {
		cache, err := cacheImage()
		if err != nil {
			return name.Digest{}, err
		}
		if _, err := s.registry.push(ctx, cache, []string{p.cacheImage}, creds.build()); err != nil {
			return name.Digest{}, err
		}
	}
	return built, nil
}

// rebase does what a rebase pod's containers do.
func (s steps) rebase(ctx context.Context, p plan, creds credentials) outcome {
	if message, ok := s.failures.of(p.namespace, p.labels); ok {
		return failed(kpackv1alpha2.RebaseContainerName, exitFailed, errors.New(message))
	}
	app, _, err := s.registry.image(ctx, p.lastBuiltImage, creds.build())
	if err != nil {
		return failed(kpackv1alpha2.RebaseContainerName, exitFailed, fmt.Errorf("could not access previous image: %s: %w", p.lastBuiltImage, err))
	}
	run, _, err := s.registry.image(ctx, p.runImage, creds.build())
	if err != nil {
		return failed(kpackv1alpha2.RebaseContainerName, exitFailed, fmt.Errorf("could not access run image: %s: %w", p.runImage, err))
	}
	img, err := rebase(app, run, p.runImage)
	if err != nil {
		return failed(kpackv1alpha2.RebaseContainerName, exitFailed, err)
	}
	rebased, err := s.registry.push(ctx, img, p.tags, creds.build())
	if err != nil {
		return failed(kpackv1alpha2.RebaseContainerName, exitFailed, err)
	}
	return s.complete(ctx, p, rebased, creds)
}

// complete does what kpack's completion binary does: it reads the app image back, with the
// ServiceAccount's credentials, and reports kpack's build metadata in its termination message.
func (s steps) complete(ctx context.Context, p plan, built name.Digest, creds credentials) outcome {
	img, _, err := s.registry.image(ctx, built.Name(), creds.serviceAccount)
	if err != nil {
		return failed(kpackv1alpha2.CompletionContainerName, exitFailed, err)
	}
	metadata, err := readBuildMetadata(img, built.Name())
	if err != nil {
		return failed(kpackv1alpha2.CompletionContainerName, exitFailed, err)
	}
	if p.cacheTag != "" {
		// Like kpack, report no cache rather than fail when the cache cannot be read.
		if _, cache, err := s.registry.image(ctx, p.cacheTag, creds.serviceAccount); err == nil {
			metadata.LatestCacheImage = cache.Name()
		}
	}
	message, err := metadata.encode()
	if err != nil {
		return failed(kpackv1alpha2.CompletionContainerName, exitFailed, err)
	}
	return succeeded(message)
}
