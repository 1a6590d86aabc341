# lm — see README.md. `make run` starts the main job, `make test` runs every test.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w -X lmtool.dev/lm/pkg/buildinfo.version=$(VERSION) -X lmtool.dev/lm/pkg/buildinfo.commit=$(COMMIT)
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man/man1
DATADIR  ?= $(PREFIX)/share
DESTDIR  ?=

.PHONY: build run test bench generate install uninstall lint clean

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/lm ./cmd/lm

run: build
	./scripts/demo.sh

# The browser tests' screenshots of every view are kept here.
ARTIFACTS ?= $(CURDIR)/test-artifacts

test:
	$(GO) vet ./...
	LM_SCREENSHOTS=$(ARTIFACTS)/screenshots $(GO) test -count=1 ./...
	# Damaged stores: the seed corpus ran above; a few seconds of new cases.
	$(GO) test -run '^$$' -fuzz '^FuzzDamagedStore$$' -fuzztime 10s -parallel 2 ./pkg/registry

bench: build
	./scripts/bench.sh

generate:
	$(GO) run ./cmd/gendocs .

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) \
		$(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 bin/lm $(DESTDIR)$(BINDIR)/lm
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)/
	install -m 0644 completions/lm.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/lm
	install -m 0644 completions/lm.zsh $(DESTDIR)$(DATADIR)/zsh/site-functions/_lm
	install -m 0644 completions/lm.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/lm.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/lm $(DESTDIR)$(MANDIR)/lm.1 $(DESTDIR)$(MANDIR)/lm-*.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/lm \
		$(DESTDIR)$(DATADIR)/zsh/site-functions/_lm \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/lm.fish

lint:
	$(GO) vet ./...
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"

clean:
	rm -rf bin test-artifacts
