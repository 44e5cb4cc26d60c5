"""Expected values for h200t: the GPU of PRODUCTS as gpumem measured it, and
what the device's own properties say of any GPU of compute capability 9.0.

Written by `gpumem plugin new h200t` (gpumem 0.1.0, 2026-12-04) from 2 run(s) on
1 card(s) (RUNS: card, date, id). Each MEASURED value is the median of those runs;
its band = the runs' own 95 % intervals + their run-to-run spread + a card-to-card allowance
learned from gpumem's multi-card data (its source names each part, the cards and the runs).
All runs measured one card: each band's card-to-card part is learned from gpumem's runs on 14 cards of this model (nvidia-h200), not seen among these runs. They apply to a CUDA device of these products and, where the calibrated simulator
reproduces them (``sim`` True), to this package's simulator config. Any other device of the
compute capability gets the device-property values only.

A human should still add: published sources (a datasheet, a paper, another tool's output) for
the values they cover (replace or extend the source text), and runs from more cards.
"""

from __future__ import annotations

from gpumem.api import DeviceInfo, Expected, device_property_expected

#: The products (CUDA device names) the runs measured.
PRODUCTS = ('NVIDIA H200',)
#: The runs the values come from: card, date, id.
RUNS = ('GPU-c49e3db9 2026-12-04 #6928', 'GPU-c49e3db9 2026-12-04 #130f')
#: This package's simulator config (sim.toml ``name``): a simulated device named after it.
SIM_MODEL = 'h200t'

#: (finding, value, units, relative band, absolute band, reproduced by the simulator, the
#: sweep coordinates of a list value's elements, source)
MEASURED: tuple[tuple, ...] = (
    ('bw.dram_copy', 4027.795, 'GB/s', 0.0294, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 2.94% = the runs' own 95 % intervals 0.43% + 2.4 x sqrt(2 x (card to card 0.51%)^2 + (run to run 0.61%)^2 x (1 + 1/2)) = 2.51%; run to run pooled with the 2 runs' own standard deviation (0.30%); sigma card to card 0.514 %, run to run 0.651 %: bw.dram_copy's over 6 nvidia-h200 cards, 12 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dram_read', 4396.78, 'GB/s', 0.06774, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.77% = the runs' own 95 % intervals 0.93% + 2.4 x sqrt(2 x (card to card 1.55%)^2 + (run to run 0.87%)^2 x (1 + 1/2)) = 5.85%; run to run pooled with the 2 runs' own standard deviation (0.65%); sigma card to card 1.55 %, run to run 0.898 %: bw.dram_read's over 6 nvidia-h200 cards, 12 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dram_read_fraction', 0.9133, '1', 0.06784, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.78% = the runs' own 95 % intervals 0.93% + 2.4 x sqrt(2 x (card to card 1.55%)^2 + (run to run 0.87%)^2 x (1 + 1/2)) = 5.85%; run to run pooled with the 2 runs' own standard deviation (0.65%); sigma card to card 1.55 %, run to run 0.897 %: bw.dram_read_fraction's over 6 nvidia-h200 cards, 12 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dram_write', 4360.59, 'GB/s', 0.0469, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.69% = the runs' own 95 % intervals 0.55% + 2.4 x sqrt(2 x (card to card 0.95%)^2 + (run to run 0.88%)^2 x (1 + 1/2)) = 4.14%; run to run pooled with the 2 runs' own standard deviation (1.25%); sigma card to card 0.95 %, run to run 0.804 %: bw.dram_write's over 6 nvidia-h200 cards, 12 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.l1', 32802.1, 'GB/s', 0.01293, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.29% = the runs' own 95 % intervals 0.83% + 2.4 x sqrt(2 x (card to card 0.08%)^2 + (run to run 0.13%)^2 x (1 + 1/2)) = 0.46%; run to run pooled with the 2 runs' own standard deviation (0.14%); sigma card to card 0.08 %, run to run 0.124 %: bw.l1's over 5 nvidia-h200 cards, 10 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.l1_bytes_per_clk', 125.5, 'byte/cycle', 0.01328, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.33% = the runs' own 95 % intervals 0.88% + 2.4 x sqrt(2 x (card to card 0.09%)^2 + (run to run 0.12%)^2 x (1 + 1/2)) = 0.45%; run to run pooled with the 2 runs' own standard deviation (0.11%); sigma card to card 0.086 %, run to run 0.118 %: bw.l1_bytes_per_clk's over 5 nvidia-h200 cards, 10 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.l1_width_fraction', 0.9805, '1', 0.01383, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.38% = the runs' own 95 % intervals 0.92% + 2.4 x sqrt(2 x (card to card 0.09%)^2 + (run to run 0.12%)^2 x (1 + 1/2)) = 0.47%; run to run pooled with the 2 runs' own standard deviation (0.07%); sigma card to card 0.088 %, run to run 0.129 %: bw.l1_width_fraction's over 5 nvidia-h200 cards, 10 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.l2', 9021.6, 'GB/s', 0.01415, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.41% = the runs' own 95 % intervals 0.84% + 2.4 x sqrt(2 x (card to card 0.15%)^2 + (run to run 0.08%)^2 x (1 + 1/2)) = 0.58%; run to run pooled with the 2 runs' own standard deviation (0.03%); sigma card to card 0.153 %, run to run 0.092 %: bw.l2's over 5 nvidia-h200 cards, 10 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.l2_bytes_per_clk', 4556.35, 'byte/cycle', 0.01413, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.41% = the runs' own 95 % intervals 0.84% + 2.4 x sqrt(2 x (card to card 0.15%)^2 + (run to run 0.08%)^2 x (1 + 1/2)) = 0.57%; run to run pooled with the 2 runs' own standard deviation (0.03%); sigma card to card 0.152 %, run to run 0.092 %: bw.l2_bytes_per_clk's over 5 nvidia-h200 cards, 10 runs (gpumem's multi-card data, allowances.json)"),
    ('bulk.inflight_per_sm', 65536, 'byte', 0.0, 3.4735, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band +-3.47 = the runs' own 95 % intervals 0 + 2.4 x sqrt(2 x (card to card 0.63)^2 + (run to run 0.931)^2 x (1 + 1/2)) = 3.47; sigma card to card 0.63, run to run 0.964: its class's (choice) over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('bulk.latency_estimate', 1247.15, 'cycle', 0.04407, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.41% or 2 cycles = the runs' own 95 % intervals 0.37% + 2.4 x sqrt(2 x (card to card 1.11%)^2 + (run to run 0.51%)^2 x (1 + 1/2)) = 4.04%; run to run pooled with the 2 runs' own standard deviation (0.73%); sigma card to card 1.11 %, run to run 0.481 %: bulk.latency_estimate's over 5 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dram_read_bulk', 4602.25, 'GB/s', 0.05692, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 5.69% = the runs' own 95 % intervals 0.41% + 2.4 x sqrt(2 x (card to card 0.80%)^2 + (run to run 1.54%)^2 x (1 + 1/2)) = 5.28%; run to run pooled with the 2 runs' own standard deviation (0.35%); sigma card to card 0.8 %, run to run 1.61 %: bw.dram_read_bulk's over 5 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dram_read_bulk_fraction', 0.956, '1', 0.05688, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 5.69% = the runs' own 95 % intervals 0.41% + 2.4 x sqrt(2 x (card to card 0.80%)^2 + (run to run 1.54%)^2 x (1 + 1/2)) = 5.27%; run to run pooled with the 2 runs' own standard deviation (0.35%); sigma card to card 0.798 %, run to run 1.6 %: bw.dram_read_bulk_fraction's over 5 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('l1d.half_miss_size', 200896, 'byte', 0.28795, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 28.79% = the runs' own 95 % intervals 24.17% + 2.4 x sqrt(2 x (card to card 0.96%)^2 + (run to run 1.11%)^2 x (1 + 1/2)) = 4.62%; run to run pooled with the 2 runs' own standard deviation (0.01%); sigma card to card 0.962 %, run to run 1.18 %: l1d.half_miss_size's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('l1d.hit_latency', 34.0, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.00% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: l1d.hit_latency's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('l1d.line', 128, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('l1d.sector', 32, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('l2.fill_unit', 64, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('l2.line', 128, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('ro.half_miss_size', 200648, 'byte', 0.3282, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 32.82% = the runs' own 95 % intervals 24.18% + 2.4 x sqrt(2 x (card to card 0.96%)^2 + (run to run 2.72%)^2 x (1 + 1/2)) = 8.64%; run to run pooled with the 2 runs' own standard deviation (0.02%); sigma card to card 0.959 %, run to run 2.89 %: ro.half_miss_size's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('ro.hit_latency', 43.0, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.00% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: ro.hit_latency's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('ro.line', 128, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('ro.sector', 32, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('cpasync.speedup', [0.575, 0.8705, 1.013, 1.036, 1.032], '1', 0.08572, 0.0, False, ('groups', (1, 2, 4, 8, 16)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 8.57% = the runs' own 95 % intervals 1.78% + 2.4 x sqrt(2 x (card to card 1.70%)^2 + (run to run 1.22%)^2 x (1 + 1/2)) = 6.80%; run to run pooled with the 2 runs' own standard deviation (1.37%); sigma card to card 1.7 %, run to run 1.2 %: cpasync.speedup's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('cpasync.speedup_low_occupancy', [0.3695, 0.662, 1.112, 1.679, 2.009], '1', 0.09618, 0.0, False, ('groups', (1, 2, 4, 8, 16)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 9.62% = the runs' own 95 % intervals 1.75% + 2.4 x sqrt(2 x (card to card 2.19%)^2 + (run to run 0.86%)^2 x (1 + 1/2)) = 7.86%; run to run pooled with the 2 runs' own standard deviation (0.84%); sigma card to card 2.19 %, run to run 0.863 %: cpasync.speedup_low_occupancy's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dsmem', 33.73, 'GB/s', 0.01, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% = the runs' own 95 % intervals 0.01% + 2.4 x sqrt(2 x (card to card 0.01%)^2 + (run to run 0.01%)^2 x (1 + 1/2)) = 0.03%; at least 1%; sigma card to card 0.006 %, run to run 0.01 %: bw.dsmem's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.dsmem_local', 244.22, 'GB/s', 0.01, 0.0, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% = the runs' own 95 % intervals 0.01% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.01%; at least 1%; run to run pooled with the 2 runs' own standard deviation (0.01%); sigma card to card 0.002 %, run to run 0.003 %: bw.dsmem_local's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('dsmem.bw_by_cluster', [17.04, 14.69, 15.985], 'byte/cycle', 0.01444, 0.0, False, ('cluster', (2, 4, 8)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.44% = the runs' own 95 % intervals 0.28% + 2.4 x sqrt(2 x (card to card 0.33%)^2 + (run to run 0.09%)^2 x (1 + 1/2)) = 1.16%; run to run pooled with the 2 runs' own standard deviation (0.13%); sigma card to card 0.334 %, run to run 0.08 %: dsmem.bw_by_cluster's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('dsmem.remote_fraction', 0.138, '1', 0.01, 0.0, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% = the runs' own 95 % intervals 0.36% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: dsmem.remote_fraction's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('dsmem.latency_by_distance', [38.17, 213.92, 212.43, 211.95, 211.34, 214.33, 212.54, 208.94], 'cycle', 0.03246, 2.0, True, ('distance', (0, 1, 2, 3, 4, 5, 6, 7)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 3.25% or 2 cycles = the runs' own 95 % intervals 0.05% + 2.4 x sqrt(2 x (card to card 0.94%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 3.19%; sigma card to card 0.941 %, run to run 0 %: dsmem.latency_by_distance's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('dsmem.remote_extra', 174.25, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.14% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: dsmem.remote_extra's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dsmem', 212.43, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.11% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: lat.dsmem's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dsmem_local', 38.17, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.01% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: lat.dsmem_local's over 6 nvidia-h200 cards, 14 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.best_k', [1, 1, 2], '1', 0.0, 4.0406, True, ('order', ('coalesced', 'thread', 'warp')),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band +-4.04 = the runs' own 95 % intervals 0 + 2.4 x sqrt(2 x (card to card 0.473)^2 + (run to run 1.26)^2 x (1 + 1/2)) = 4.04; run to run pooled with the 2 runs' own standard deviation (1.41); sigma card to card 0.473, run to run 1.25: ilp.best_k's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.k8_vs_k2', [0.9995, 0.5405, 1.0145], '1', 0.06641, 0.0, False, ('order', ('coalesced', 'thread', 'warp')),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.64% = the runs' own 95 % intervals 2.00% + 2.4 x sqrt(2 x (card to card 0.87%)^2 + (run to run 1.22%)^2 x (1 + 1/2)) = 4.64%; run to run pooled with the 2 runs' own standard deviation (2.86%); sigma card to card 0.869 %, run to run 1 %: ilp.k8_vs_k2's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.k8_vs_k2_by_footprint', [0.5405, 0.5465], '1', 0.1089, 0.0, True, ('footprint', (503316480, 2013265920)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 10.89% = the runs' own 95 % intervals 1.76% + 2.4 x sqrt(2 x (card to card 0.87%)^2 + (run to run 2.94%)^2 x (1 + 1/2)) = 9.13%; run to run pooled with the 2 runs' own standard deviation (0.65%); sigma card to card 0.869 %, run to run 3.04 %: ilp.k8_vs_k2_by_footprint's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.k8_vs_k2_reverse', [0.9995, 0.5365, 0.98], '1', 0.05744, 0.0, False, ('order', ('coalesced', 'thread', 'warp')),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 5.74% = the runs' own 95 % intervals 1.68% + 2.4 x sqrt(2 x (card to card 0.72%)^2 + (run to run 1.10%)^2 x (1 + 1/2)) = 4.06%; run to run pooled with the 2 runs' own standard deviation (2.60%); sigma card to card 0.724 %, run to run 0.902 %: ilp.k8_vs_k2_reverse's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.l2_best_k', [1, 1, 5], '1', 0.0, 2.1394, False, ('order', ('coalesced', 'thread', 'warp')),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band +-2.14 = the runs' own 95 % intervals 0 + 2.4 x sqrt(2 x (card to card 0.63)^2 + (run to run 0)^2 x (1 + 1/2)) = 2.14; sigma card to card 0.63, run to run 0: ilp.l2_best_k's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('ilp.l2_k8_vs_k2', [0.9985, 0.61, 1.032], '1', 0.11377, 0.0, True, ('order', ('coalesced', 'thread', 'warp')),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 11.38% = the runs' own 95 % intervals 2.85% + 2.4 x sqrt(2 x (card to card 2.18%)^2 + (run to run 1.45%)^2 x (1 + 1/2)) = 8.52%; run to run pooled with the 2 runs' own standard deviation (0.64%); sigma card to card 2.18 %, run to run 1.49 %: ilp.l2_k8_vs_k2's over 11 nvidia-h200 cards, 25 runs (gpumem's multi-card data, allowances.json)"),
    ('l2.near_fraction', 0.53, '1', 0.02222, 0.0, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 2.22% = the runs' own 95 % intervals 1.04% + 2.4 x sqrt(2 x (card to card 0.32%)^2 + (run to run 0.16%)^2 x (1 + 1/2)) = 1.18%; run to run pooled with the 2 runs' own standard deviation (0.27%); sigma card to card 0.321 %, run to run 0.116 %: l2.near_fraction's over 4 nvidia-h200 cards, 8 runs (gpumem's multi-card data, allowances.json)"),
    ('l2.sm_groups', 2, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('l2.sm_map_far_latency', 531.0, 'cycle', 0.06784, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.78% or 2 cycles = the runs' own 95 % intervals 0.09% + 2.4 x sqrt(2 x (card to card 1.97%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 6.69%; sigma card to card 1.97 %, run to run 0 %: l2.sm_map_far_latency's over 4 nvidia-h200 cards, 8 runs (gpumem's multi-card data, allowances.json)"),
    ('l2.sm_map_near_latency', 456.5, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.11% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.07%)^2 x (1 + 1/2)) = 0.20%; at least 1%; run to run pooled with the 2 runs' own standard deviation (0.15%); sigma card to card 0 %, run to run 0 %: l2.sm_map_near_latency's over 4 nvidia-h200 cards, 8 runs (gpumem's multi-card data, allowances.json)"),
    ('l1d.size', 211136, 'byte', 0.19632, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 19.63% = the runs' own 95 % intervals 8.05% + 2.4 x sqrt(2 x (card to card 1.29%)^2 + (run to run 3.65%)^2 x (1 + 1/2)) = 11.58%; run to run pooled with the 2 runs' own standard deviation (4.42%); sigma card to card 1.29 %, run to run 3.59 %: l1d.size's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('l2.near_size', 28064640, 'byte', 0.21602, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 21.60% = the runs' own 95 % intervals 8.08% + 2.4 x sqrt(2 x (card to card 1.49%)^2 + (run to run 4.27%)^2 x (1 + 1/2)) = 13.52%; run to run pooled with the 2 runs' own standard deviation (4.45%); sigma card to card 1.49 %, run to run 4.25 %: l2.near_size's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('l2.partitions', 2, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('l2.size', 59354112, 'byte', 0.07932, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 7.93% = the runs' own 95 % intervals 0.13% + 2.4 x sqrt(2 x (card to card 1.22%)^2 + (run to run 2.25%)^2 x (1 + 1/2)) = 7.80%; run to run pooled with the 2 runs' own standard deviation (0.18%); sigma card to card 1.22 %, run to run 2.33 %: l2.size's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dram', 682.5, 'cycle', 0.04731, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.73% or 2 cycles = the runs' own 95 % intervals 0.37% + 2.4 x sqrt(2 x (card to card 1.26%)^2 + (run to run 0.28%)^2 x (1 + 1/2)) = 4.36%; run to run pooled with the 2 runs' own standard deviation (0.10%); sigma card to card 1.26 %, run to run 0.293 %: lat.dram's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dram_ns', 344.6965, 'ns', 0.04731, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.73% = the runs' own 95 % intervals 0.37% + 2.4 x sqrt(2 x (card to card 1.26%)^2 + (run to run 0.28%)^2 x (1 + 1/2)) = 4.36%; run to run pooled with the 2 runs' own standard deviation (0.10%); sigma card to card 1.26 %, run to run 0.293 %: lat.dram_ns's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dram_tlb_miss', 691.0, 'cycle', 0.04965, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.97% or 2 cycles = the runs' own 95 % intervals 0.51% + 2.4 x sqrt(2 x (card to card 1.30%)^2 + (run to run 0.25%)^2 x (1 + 1/2)) = 4.46%; sigma card to card 1.3 %, run to run 0.257 %: lat.dram_tlb_miss's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.dram_tlb_miss_ns', 348.99, 'ns', 0.04965, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 4.97% = the runs' own 95 % intervals 0.51% + 2.4 x sqrt(2 x (card to card 1.30%)^2 + (run to run 0.25%)^2 x (1 + 1/2)) = 4.46%; sigma card to card 1.3 %, run to run 0.257 %: lat.dram_tlb_miss_ns's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l1', 34.0, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.00% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: lat.l1's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l1_ns', 17.172, 'ns', 0.01, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% = the runs' own 95 % intervals 0.00% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: lat.l1_ns's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l2', 284.0, 'cycle', 0.01223, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.22% or 2 cycles = the runs' own 95 % intervals 0.18% + 2.4 x sqrt(2 x (card to card 0.25%)^2 + (run to run 0.21%)^2 x (1 + 1/2)) = 1.05%; run to run pooled with the 2 runs' own standard deviation (0.50%); sigma card to card 0.247 %, run to run 0.176 %: lat.l2's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l2_far', 516.5, 'cycle', 0.06183, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.18% or 2 cycles = the runs' own 95 % intervals 0.19% + 2.4 x sqrt(2 x (card to card 1.70%)^2 + (run to run 0.53%)^2 x (1 + 1/2)) = 5.99%; run to run pooled with the 2 runs' own standard deviation (0.68%); sigma card to card 1.7 %, run to run 0.521 %: lat.l2_far's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l2_far_ns', 260.8585, 'ns', 0.06183, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 6.18% = the runs' own 95 % intervals 0.19% + 2.4 x sqrt(2 x (card to card 1.70%)^2 + (run to run 0.53%)^2 x (1 + 1/2)) = 5.99%; run to run pooled with the 2 runs' own standard deviation (0.68%); sigma card to card 1.7 %, run to run 0.521 %: lat.l2_far_ns's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.l2_ns', 143.434, 'ns', 0.01223, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.22% = the runs' own 95 % intervals 0.18% + 2.4 x sqrt(2 x (card to card 0.25%)^2 + (run to run 0.21%)^2 x (1 + 1/2)) = 1.05%; run to run pooled with the 2 runs' own standard deviation (0.50%); sigma card to card 0.247 %, run to run 0.176 %: lat.l2_ns's over 8 nvidia-h200 cards, 22 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P1', 682.5, 'cycle', 0.0204, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 2.04% or 2 cycles = the runs' own 95 % intervals 1.17% + 2.4 x sqrt(2 x (card to card 0.13%)^2 + (run to run 0.26%)^2 x (1 + 1/2)) = 0.87%; run to run pooled with the 2 runs' own standard deviation (0.31%); sigma card to card 0.126 %, run to run 0.225 %: lat.pattern.P1's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P2', 678.5, 'cycle', 0.03351, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 3.35% or 2 cycles = the runs' own 95 % intervals 1.40% + 2.4 x sqrt(2 x (card to card 0.51%)^2 + (run to run 0.32%)^2 x (1 + 1/2)) = 1.95%; run to run pooled with the 2 runs' own standard deviation (0.31%); sigma card to card 0.505 %, run to run 0.319 %: lat.pattern.P2's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P3', 284.0, 'cycle', 0.02971, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 2.97% or 2 cycles = the runs' own 95 % intervals 0.53% + 2.4 x sqrt(2 x (card to card 0.63%)^2 + (run to run 0.41%)^2 x (1 + 1/2)) = 2.44%; run to run pooled with the 2 runs' own standard deviation (0.50%); sigma card to card 0.627 %, run to run 0.355 %: lat.pattern.P3's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P4', 285.5, 'cycle', 0.01311, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.31% or 2 cycles = the runs' own 95 % intervals 0.18% + 2.4 x sqrt(2 x (card to card 0.31%)^2 + (run to run 0.14%)^2 x (1 + 1/2)) = 1.14%; run to run pooled with the 2 runs' own standard deviation (0.25%); sigma card to card 0.311 %, run to run 0 %: lat.pattern.P4's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P5', 283.5, 'cycle', 0.02022, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 2.02% or 2 cycles = the runs' own 95 % intervals 0.35% + 2.4 x sqrt(2 x (card to card 0.16%)^2 + (run to run 0.54%)^2 x (1 + 1/2)) = 1.67%; run to run pooled with the 2 runs' own standard deviation (0.75%); sigma card to card 0.156 %, run to run 0.394 %: lat.pattern.P5's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.pattern.P6', 772.25, 'cycle', 0.07139, 2.0, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 7.14% or 2 cycles = the runs' own 95 % intervals 4.21% + 2.4 x sqrt(2 x (card to card 0.03%)^2 + (run to run 1.00%)^2 x (1 + 1/2)) = 2.93%; run to run pooled with the 2 runs' own standard deviation (0.05%); sigma card to card 0.028 %, run to run 1.22 %: lat.pattern.P6's over 2 nvidia-h200 cards, 4 runs (gpumem's multi-card data, allowances.json)"),
    ('bw.smem', 253.08, 'GB/s', 0.01, 0.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% = the runs' own 95 % intervals 0.00% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0.001 %, run to run 0.001 %: bw.smem's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('smem.peak_warps', 8, '1', 0.0, 0.0, False, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band +-0 = the runs' own 95 % intervals 0 + 2.4 x sqrt(2 x (card to card 0)^2 + (run to run 0)^2 x (1 + 1/2)) = 0; sigma card to card 0, run to run 0: smem.peak_warps's over 4 nvidia-h200 cards, 8 runs (gpumem's multi-card data, allowances.json)"),
    ('lat.smem', 27.19, 'cycle', 0.01, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.02% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: lat.smem's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('smem.bank_width', 4, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('smem.banks', 32, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('smem.conflict_latency', [27.19, 29.19, 33.19, 41.19, 57.19, 89.34], 'cycle', 0.01, 2.0, True, ('ways', (1, 2, 4, 8, 16, 32)),
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 1.00% or 2 cycles = the runs' own 95 % intervals 0.02% + 2.4 x sqrt(2 x (card to card 0.00%)^2 + (run to run 0.00%)^2 x (1 + 1/2)) = 0.00%; at least 1%; sigma card to card 0 %, run to run 0 %: smem.conflict_latency's over 8 nvidia-h200 cards, 16 runs (gpumem's multi-card data, allowances.json)"),
    ('tlb.page', 16777216, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('tlb_l1.entries', 16, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('tlb_l1.miss_penalty', 9.4, 'cycle', 0.41513, 2.0, True, None,
     "gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): median; band 41.51% or 2 cycles = the runs' own 95 % intervals 11.22% + 2.4 x sqrt(2 x (card to card 6.36%)^2 + (run to run 7.23%)^2 x (1 + 1/2)) = 30.29%; run to run pooled with the 2 runs' own standard deviation (11.13%); sigma card to card 6.36 %, run to run 6.84 %: tlb_l1.miss_penalty's over 6 nvidia-h200 cards, 19 runs (gpumem's multi-card data, allowances.json)"),
    ('tlb_l1.reach', 268435456, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('tlb_l1.sets', 1, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('tlb_l1.ways', 16, '1', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
    ('tlb_l2.no_level_below', 17163222912, 'byte', 0.0, 0.0, True, None,
     'gpumem on NVIDIA H200 (1 card: GPU-c49e3db9), 2 runs (GPU-c49e3db9 2026-12-04 #6928, GPU-c49e3db9 2026-12-04 #130f): the same in every run; a structural value, exact'),
)


def _applies(device: DeviceInfo, reproduced: bool) -> bool:
    if device.kind == "sim":
        model = device.name.removeprefix("sim ")
        return reproduced and (model == SIM_MODEL or model.startswith(SIM_MODEL + "-"))
    return device.name in PRODUCTS


def expected_values(device: DeviceInfo) -> list[Expected]:
    out = [Expected(name, value, source, units, rel_tol=rel, abs_tol=abs_, index=index)
           for name, value, units, rel, abs_, sim, index, source in MEASURED
           if _applies(device, sim)]
    have = {e.name for e in out}
    return out + [e for e in device_property_expected(device) if e.name not in have]
