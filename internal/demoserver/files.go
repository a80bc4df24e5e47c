package demoserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFileSize bounds what read_file returns and write_file accepts, so that
// one call cannot fill a model's context or the disk.
const maxFileSize = 1 << 20

// errNoRoot is returned by every file operation when Options.Root is empty.
var errNoRoot = errors.New("file tools are disabled: the demo server has no sandbox root (Options.Root, --root)")

// openRoot opens the sandbox after checking name lexically, so that the
// common mistakes get a clear message; os.Root then enforces the sandbox for
// real, including symlinks that resolve outside it.
//
// The sandbox is opened per call: New has no error to return, and the
// server has no Close to release a long-lived descriptor.
func (d *demo) openRoot(name string) (*os.Root, error) {
	if d.root == "" {
		return nil, errNoRoot
	}
	switch {
	case name == "":
		return nil, errors.New("path must not be empty")
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return nil, fmt.Errorf("path %q is absolute; paths are relative to the sandbox root", name)
	case !filepath.IsLocal(name):
		return nil, fmt.Errorf("path %q leaves the sandbox root", name)
	}
	r, err := os.OpenRoot(d.root)
	if err != nil {
		// Do not show the host path to the client.
		return nil, errors.New("the sandbox root cannot be opened")
	}
	return r, nil
}

// readSandboxFile reads the regular file name under the sandbox root.
func (d *demo) readSandboxFile(name string) ([]byte, error) {
	r, err := d.openRoot(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Stat first, so that a directory, FIFO or device is refused before
	// opening it can block or stream forever.
	fi, err := r.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is %d bytes; the limit is %d", name, fi.Size(), maxFileSize)
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s grew past the limit of %d bytes", name, maxFileSize)
	}
	return data, nil
}

type pathInput struct {
	Path string `json:"path" jsonschema:"a path relative to the sandbox root, for example notes/todo.txt"`
}

type listDirInput struct {
	Path string `json:"path,omitempty" jsonschema:"a directory relative to the sandbox root; default \".\", the root itself"`
}

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"a path relative to the sandbox root; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the text to write, replacing any existing content"`
}

// A dirEntry is one entry of list_dir's output.
type dirEntry struct {
	Name string `json:"name" jsonschema:"the entry's name"`
	Type string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size int64  `json:"size" jsonschema:"size in bytes; 0 for directories"`
}

// listDirOutput is list_dir's structured output.
type listDirOutput struct {
	Entries []dirEntry `json:"entries" jsonschema:"the directory's entries, sorted by name"`
}

// addFileTools registers read_file, list_dir and write_file.
func (d *demo) addFileTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Title:       "Read file",
		Description: "Reads a text file under the server's sandbox directory.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, d.readFile)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_dir",
		Title:       "List directory",
		Description: "Lists a directory under the server's sandbox directory: name, type and size of each entry.",
		InputSchema: inputSchema[listDirInput](func(p map[string]*jsonschema.Schema) {
			p["path"].Default = []byte(`"."`)
		}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, d.listDir)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		Title:       "Write file",
		Description: "Writes a text file under the server's sandbox directory, creating parent directories and replacing any existing file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, d.writeFile)
}

func (d *demo) readFile(_ context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, any, error) {
	data, err := d.readSandboxFile(in.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("read_file: %w", err)
	}
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("read_file: %s is not UTF-8 text", in.Path)
	}
	return textResult(string(data)), nil, nil
}

func (d *demo) listDir(_ context.Context, _ *mcp.CallToolRequest, in listDirInput) (*mcp.CallToolResult, listDirOutput, error) {
	entries, err := d.readSandboxDir(in.Path)
	if err != nil {
		return nil, listDirOutput{}, fmt.Errorf("list_dir: %w", err)
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%-7s %8d %s\n", e.Type, e.Size, e.Name)
	}
	if len(entries) == 0 {
		b.WriteString("(empty)\n")
	}
	return textResult(b.String()), listDirOutput{Entries: entries}, nil
}

// readSandboxDir lists the directory name under the sandbox root, sorted by
// name. Symlinks are reported as such and not followed.
func (d *demo) readSandboxDir(name string) ([]dirEntry, error) {
	if name == "" {
		name = "."
	}
	r, err := d.openRoot(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	entries := make([]dirEntry, 0, len(des))
	for _, de := range des {
		e := dirEntry{Name: de.Name(), Type: "other"}
		switch t := de.Type(); {
		case t.IsDir():
			e.Type = "dir"
		case t.IsRegular():
			e.Type = "file"
		case t&fs.ModeSymlink != 0:
			e.Type = "symlink"
		}
		if e.Type == "file" {
			if fi, err := de.Info(); err == nil {
				e.Size = fi.Size()
			}
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b dirEntry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

func (d *demo) writeFile(_ context.Context, _ *mcp.CallToolRequest, in writeFileInput) (*mcp.CallToolResult, any, error) {
	if len(in.Content) > maxFileSize {
		return nil, nil, fmt.Errorf("write_file: content is %d bytes; the limit is %d", len(in.Content), maxFileSize)
	}
	r, err := d.openRoot(in.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("write_file: %w", err)
	}
	defer r.Close()
	if dir := filepath.Dir(in.Path); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("write_file: %w", err)
		}
	}
	if err := r.WriteFile(in.Path, []byte(in.Content), 0o644); err != nil {
		return nil, nil, fmt.Errorf("write_file: %w", err)
	}
	return textResult(fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)), nil, nil
}

// readFileResource serves the file:///{+path} template: the URI's path,
// relative to the sandbox root, read with the same rules as read_file.
func (d *demo) readFileResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Host != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not a file:/// URI", uri)}
	}
	name := strings.TrimPrefix(u.Path, "/")
	data, err := d.readSandboxFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("reading %s: %v", uri, err)}
	}
	c := &mcp.ResourceContents{URI: uri}
	if utf8.Valid(data) {
		c.MIMEType, c.Text = "text/plain", string(data)
	} else {
		c.MIMEType, c.Blob = "application/octet-stream", data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}
