#!/usr/bin/env bash
# GPU evidence, part 1: the project's whole test suite on a GPU machine (gpu-marked tests run
# there), with the environment recorded. Usage on the device: bash scripts/gpu_tests.sh "$OUT"
set -uo pipefail
out=${1:?usage: gpu_tests.sh OUT_DIR}
export PYTHONUNBUFFERED=1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
python3 -c "import json, caiconform.env as e; print(json.dumps(e.capture(), indent=2))" > "$out/env.json"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
python3 -m pytest tests -q -p no:cacheprovider -rs --junitxml="$out/junit.xml" 2>&1 | tee "$out/pytest.log"
echo "pytest exit: ${PIPESTATUS[0]}"
