#!/usr/bin/env python3
"""plot_loss.py CSV PNG — the trainer's loss curve (coll-train --csv/--plot).

CSV columns: step,epoch,loss,lr,samples_per_s,compute_ms,comm_ms; an optional
'test_accuracy' row kind is ignored here.  Uses python3-matplotlib (Debian)."""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_loss.py: python3-matplotlib is not installed (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 3
    steps, losses = [], []
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            steps.append(int(row["step"]))
            losses.append(float(row["loss"]))
    if not steps:
        print("plot_loss.py: no rows in " + sys.argv[1], file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, losses, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean over the global batch)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
