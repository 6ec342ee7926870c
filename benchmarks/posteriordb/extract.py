"""Write `posteriors.json`: the data and reference posterior summaries of the posteriors the suite checks, read
from a copy of posteriordb (github: stan-dev/posteriordb, a checkout or its bare git directory).

Each reference posterior is posteriordb's 10,000 draws (10 chains of 1,000, thinned by 10, from Stan); the file
keeps each parameter's mean and standard deviation, and the data as posteriordb has it.

Run: python benchmarks/posteriordb/extract.py PATH_TO_POSTERIORDB
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "posteriors.json"
DATABASE = "posterior_database"


def read_bytes(root: Path, path: str) -> bytes:
    """The bytes of ``path`` in the copy at ``root``: a file of a checkout, else the git object at HEAD."""
    if (root / path).exists():
        return (root / path).read_bytes()
    return subprocess.run(["git", "-C", str(root), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout


def read_zipped_json(root: Path, path: str) -> object:
    """The one JSON file inside the zip at ``path``."""
    with zipfile.ZipFile(io.BytesIO(read_bytes(root, path))) as archive:
        return json.loads(archive.read(archive.namelist()[0]))


def summary(chains: list[dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Each parameter's mean and standard deviation over all chains' draws."""
    summaries = {}
    for name in chains[0]:
        draws = np.concatenate([np.asarray(chain[name], dtype=float) for chain in chains])
        summaries[name] = {"mean": float(draws.mean()), "sd": float(draws.std(ddof=1))}
    return summaries


def posterior_entry(root: Path, name: str) -> dict[str, object]:
    """The data and the reference summary of posteriordb's posterior ``name``."""
    posterior = json.loads(read_bytes(root, f"{DATABASE}/posteriors/{name}.json"))
    data = read_zipped_json(root, f"{DATABASE}/data/data/{posterior['data_name']}.json.zip")
    draws = read_zipped_json(root, f"{DATABASE}/reference_posteriors/draws/draws/{name}.json.zip")
    return {"model": posterior["model_name"], "data": data, "reference": summary(draws)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("posteriordb", type=Path)
    args = parser.parse_args()
    from posteriordb_models import MODELS

    entries = {name: posterior_entry(args.posteriordb, name) for name in MODELS}
    OUT.write_text(json.dumps(entries, indent=None, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(entries)} posteriors, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
