package synth

import (
	"path"
	"strings"
)

// commandPackages maps a command a step could not find to the Debian
// bookworm package that provides it. The table is embedded so the rule
// planner stays offline; it covers what build and test scripts commonly call.
var commandPackages = map[string]string{
	"make": "make", "gmake": "make", "cc": "gcc", "gcc": "gcc", "c++": "g++", "g++": "g++",
	"clang": "clang", "ld": "binutils", "ar": "binutils", "as": "binutils", "strip": "binutils",
	"cmake": "cmake", "ctest": "cmake", "ninja": "ninja-build", "meson": "meson",
	"autoconf": "autoconf", "autoreconf": "autoconf", "automake": "automake", "aclocal": "automake",
	"libtool": "libtool", "libtoolize": "libtool", "m4": "m4", "bison": "bison", "yacc": "bison",
	"flex": "flex", "lex": "flex", "pkg-config": "pkg-config", "pkgconf": "pkgconf",
	"git": "git", "curl": "curl", "wget": "wget", "unzip": "unzip", "zip": "zip",
	"xz": "xz-utils", "bzip2": "bzip2", "zstd": "zstd", "patch": "patch", "file": "file",
	"jq": "jq", "rsync": "rsync", "ssh": "openssh-client", "openssl": "openssl",
	"sqlite3": "sqlite3", "psql": "postgresql-client", "mysql": "default-mysql-client",
	"redis-server": "redis-server", "redis-cli": "redis-tools",
	"python": "python-is-python3", "python3": "python3", "pip": "python3-pip", "pip3": "python3-pip",
	"perl": "perl", "ruby": "ruby", "bundle": "ruby-bundler", "gem": "ruby",
	"protoc": "protobuf-compiler", "xxd": "xxd", "bc": "bc", "gawk": "gawk",
	"ps": "procps", "pkill": "procps", "killall": "psmisc", "hostname": "hostname",
	"ip": "iproute2", "netstat": "net-tools", "nc": "netcat-openbsd", "timeout": "coreutils",
	"shellcheck": "shellcheck", "gettext": "gettext-base", "envsubst": "gettext-base",
	"msgfmt": "gettext", "doxygen": "doxygen", "pandoc": "pandoc", "graphviz": "graphviz",
	"dot": "graphviz", "valgrind": "valgrind", "gdb": "gdb", "strace": "strace",
	"cargo": "cargo", "rustc": "rustc", "java": "default-jdk-headless", "javac": "default-jdk-headless",
	"mvn": "maven", "gradle": "gradle", "lsof": "lsof", "tzdata": "tzdata", "locale": "locales",
	"docker": "docker.io", "chromium": "chromium", "Xvfb": "xvfb", "xvfb-run": "xvfb",
}

// toolchainCommands are provided by a declared toolchain, never by Debian,
// so a missing one means the toolchain is missing.
var toolchainCommands = map[string]string{
	"go": "go", "gofmt": "go", "node": "node", "npx": "npm", "npm": "npm",
	"yarn": "yarn", "yarnpkg": "yarn", "pnpm": "pnpm", "pnpx": "pnpm",
}

// headerPackages maps a header (as #included) or the first path element of
// one to the -dev package that ships it.
var headerPackages = map[string]string{
	"zlib.h": "zlib1g-dev", "zconf.h": "zlib1g-dev", "openssl": "libssl-dev", "ssl.h": "libssl-dev",
	"sqlite3.h": "libsqlite3-dev", "curl": "libcurl4-openssl-dev", "ffi.h": "libffi-dev",
	"yaml.h": "libyaml-dev", "png.h": "libpng-dev", "jpeglib.h": "libjpeg-dev", "bzlib.h": "libbz2-dev",
	"lzma.h": "liblzma-dev", "zstd.h": "libzstd-dev", "readline": "libreadline-dev",
	"ncurses.h": "libncurses-dev", "curses.h": "libncurses-dev", "pcap.h": "libpcap-dev",
	"pcap": "libpcap-dev", "libxml": "libxml2-dev", "gmp.h": "libgmp-dev", "uuid": "uuid-dev",
	"expat.h": "libexpat1-dev", "event2": "libevent-dev", "pcre.h": "libpcre3-dev",
	"pcre2.h": "libpcre2-dev", "systemd": "libsystemd-dev", "seccomp.h": "libseccomp-dev",
	"libusb-1.0": "libusb-1.0-0-dev", "sys/capability.h": "libcap-dev", "attr": "libattr1-dev",
	"acl": "libacl1-dev", "gpgme.h": "libgpgme-dev", "magic.h": "libmagic-dev",
	"hiredis": "libhiredis-dev", "mysql": "default-libmysqlclient-dev", "libpq-fe.h": "libpq-dev",
	"postgresql": "libpq-dev", "jansson.h": "libjansson-dev", "cjson": "libcjson-dev",
	"gtest": "libgtest-dev", "gmock": "libgmock-dev", "boost": "libboost-dev", "Python.h": "python3-dev",
	"glib.h": "libglib2.0-dev", "glib-2.0": "libglib2.0-dev", "gtk": "libgtk-3-dev", "X11": "libx11-dev",
	"GL": "libgl-dev", "alsa": "libasound2-dev", "sodium.h": "libsodium-dev", "unistring.h": "libunistring-dev",
	"krb5.h": "libkrb5-dev", "ldap.h": "libldap2-dev", "lz4.h": "liblz4-dev", "snappy.h": "libsnappy-dev",
	"archive.h": "libarchive-dev", "git2.h": "libgit2-dev", "fuse.h": "libfuse-dev", "tiffio.h": "libtiff-dev",
	"freetype2": "libfreetype-dev", "ft2build.h": "libfreetype-dev", "fontconfig": "libfontconfig-dev",
	"cairo": "libcairo2-dev", "webp": "libwebp-dev", "gif_lib.h": "libgif-dev", "vips": "libvips-dev",
}

// libraryPackages maps a pkg-config module, a -l name or a shared object's
// stem to its -dev (or runtime) package.
var libraryPackages = map[string]string{
	"z": "zlib1g-dev", "zlib": "zlib1g-dev", "ssl": "libssl-dev", "crypto": "libssl-dev",
	"openssl": "libssl-dev", "libssl": "libssl-dev", "libcrypto": "libssl-dev",
	"sqlite3": "libsqlite3-dev", "curl": "libcurl4-openssl-dev", "libcurl": "libcurl4-openssl-dev",
	"ffi": "libffi-dev", "libffi": "libffi-dev", "yaml": "libyaml-dev", "yaml-0.1": "libyaml-dev",
	"png": "libpng-dev", "libpng": "libpng-dev", "jpeg": "libjpeg-dev", "libjpeg": "libjpeg-dev",
	"bz2": "libbz2-dev", "lzma": "liblzma-dev", "liblzma": "liblzma-dev", "zstd": "libzstd-dev",
	"libzstd": "libzstd-dev", "readline": "libreadline-dev", "ncurses": "libncurses-dev",
	"ncursesw": "libncurses-dev", "pcap": "libpcap-dev", "libpcap": "libpcap-dev", "xml2": "libxml2-dev",
	"libxml-2.0": "libxml2-dev", "gmp": "libgmp-dev", "uuid": "uuid-dev", "expat": "libexpat1-dev",
	"event": "libevent-dev", "libevent": "libevent-dev", "pcre": "libpcre3-dev", "libpcre": "libpcre3-dev",
	"pcre2-8": "libpcre2-dev", "libpcre2-8": "libpcre2-dev", "systemd": "libsystemd-dev",
	"libsystemd": "libsystemd-dev", "seccomp": "libseccomp-dev", "libseccomp": "libseccomp-dev",
	"usb-1.0": "libusb-1.0-0-dev", "libusb-1.0": "libusb-1.0-0-dev", "cap": "libcap-dev",
	"libcap": "libcap-dev", "gpgme": "libgpgme-dev", "magic": "libmagic-dev", "libmagic": "libmagic-dev",
	"hiredis": "libhiredis-dev", "pq": "libpq-dev", "libpq": "libpq-dev", "jansson": "libjansson-dev",
	"sodium": "libsodium-dev", "libsodium": "libsodium-dev", "glib-2.0": "libglib2.0-dev",
	"gtk+-3.0": "libgtk-3-dev", "x11": "libx11-dev", "X11": "libx11-dev", "gl": "libgl-dev", "GL": "libgl-dev",
	"alsa": "libasound2-dev", "asound": "libasound2-dev", "krb5": "libkrb5-dev", "ldap": "libldap2-dev",
	"lz4": "liblz4-dev", "liblz4": "liblz4-dev", "snappy": "libsnappy-dev", "archive": "libarchive-dev",
	"libarchive": "libarchive-dev", "git2": "libgit2-dev", "libgit2": "libgit2-dev", "fuse": "libfuse-dev",
	"tiff": "libtiff-dev", "libtiff-4": "libtiff-dev", "freetype2": "libfreetype-dev",
	"fontconfig": "libfontconfig-dev", "cairo": "libcairo2-dev", "webp": "libwebp-dev", "libwebp": "libwebp-dev",
	"vips": "libvips-dev", "gtest": "libgtest-dev", "python3": "python3-dev", "python3-embed": "python3-dev",
	"stdc++": "libstdc++-12-dev", "m": "libc6-dev", "pthread": "libc6-dev", "dl": "libc6-dev", "rt": "libc6-dev",
}

// PackageForCommand returns the Debian package providing cmd, if known.
func PackageForCommand(cmd string) (string, bool) {
	p, ok := commandPackages[path.Base(cmd)]
	return p, ok
}

// PackageForHeader returns the -dev package shipping an #include path.
func PackageForHeader(h string) (string, bool) {
	if p, ok := headerPackages[h]; ok {
		return p, true
	}
	if i := strings.IndexByte(h, '/'); i > 0 {
		p, ok := headerPackages[h[:i]]
		return p, ok
	}
	return "", false
}

// PackageForLibrary returns the package for a pkg-config module, a -l name
// ("ssl"), or a shared object ("libssl.so.3").
func PackageForLibrary(l string) (string, bool) {
	if p, ok := libraryPackages[l]; ok {
		return p, true
	}
	stem := strings.TrimPrefix(l, "lib")
	if i := strings.Index(stem, ".so"); i > 0 {
		stem = stem[:i]
	}
	p, ok := libraryPackages[stem]
	return p, ok
}
