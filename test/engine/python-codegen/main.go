// pulumi-language-python for the engine tests: a Python language host that answers GeneratePackage only, which is
// what `pulumi package gen-sdk --language python` asks of it (pkg/cmd/pulumi/packages/packages.go@v3.248.0 GenSDK:
// Host.LanguageRuntime(ctx, "python") then GeneratePackage). The real host's module
// (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) is not served by the Go module proxy here;
// its GeneratePackage binds the schema with the engine's loader and hands it to pkg/v3/codegen/python, and so does
// this one, from the pkg/v3 release the CLI is built from (test/engine/pins.sh). Running Python programs is not
// offered (every other RPC answers Unimplemented): the tests run Python through the Automation API's inline mode,
// which needs no language host.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	codegen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
}

func (host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (host) GeneratePackage(
	_ context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	loader, err := schema.NewLoaderClient(req.LoaderTarget)
	if err != nil {
		return nil, err
	}
	defer loader.Close()
	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.Schema), &spec); err != nil {
		return nil, err
	}
	cached := schema.NewCachedLoader(loader)
	pkg, diags, err := schema.BindSpec(spec, cached, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
	}
	files, err := codegen.GeneratePackage("pulumi-language-python", pkg, req.ExtraFiles, cached)
	if err != nil {
		return nil, err
	}
	for name, data := range files {
		out := filepath.Join(req.Directory, name)
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return nil, fmt.Errorf("could not create output directory %s: %w", filepath.Dir(name), err)
		}
		if err := os.WriteFile(out, data, 0o600); err != nil {
			return nil, fmt.Errorf("could not write output file %s: %w", name, err)
		}
	}
	return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
}

// version is stamped by build.sh (-X main.version=...), as Pulumi stamps its hosts.
var version = "0.0.0"

func main() {
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host{})
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python: could not serve: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from the first line of stdout (sdk/go/common/resource/plugin/plugin.go parsePort).
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
		os.Exit(1)
	}
}
