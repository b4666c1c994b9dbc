# Wraps the README commands: `make demo` (main job) and `make test` (the test suite).
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc)
DEMO_DIR ?= demo-model
PREFIX ?= /usr/local
DEMO_TEXT ?= Hello! This is codectalk, speaking from a plain C engine.

.PHONY: all deps build install onnx-venv demo test test-asan test-tsan test-arm64 test-all clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCT_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

# libcodectalk.so/.a, codectalk.h, codectalk_status.h, codectalk.pc and the codectalk program
# under $(PREFIX) (README.md "Embed the C library").
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

$(DEMO_DIR)/config.json: | build
	$(BUILD)/codectalk make-model --preset tiny --seed 1 --out $(DEMO_DIR) --force

demo: build $(DEMO_DIR)/config.json
	$(BUILD)/codectalk synth -m $(DEMO_DIR) -t "$(DEMO_TEXT)" -s vivian -l english --seed 1 -o demo.wav
	@echo "speech written to demo.wav (random weights: it sounds like noise, not words)"

# The ONNX Runtime venv for test_onnx (from PyPI, once per build dir). Outside CI an
# unreachable PyPI only makes test_onnx skip (exit 77); with CI=true it stops here.
onnx-venv: build
	@tests/onnx/setup_venv.sh $(BUILD) || test $$? -eq 77

test: build onnx-venv
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j$(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCT_WERROR=ON -DCT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && CT_CODEC_PARITY_SKIP_FULL=1 ctest --output-on-failure --no-tests=error -j$(JOBS) -LE "heavy|onnx"

# the threaded unit tests (ctest label tsan) under ThreadSanitizer: only their targets are built
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCT_WERROR=ON -DCT_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target tsan_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:exitcode=66 ctest --output-on-failure --no-tests=error -j$(JOBS) -L tsan

test-arm64: deps
	scripts/test-arm64.sh build-arm64

test-all: test test-asan test-tsan test-arm64

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
