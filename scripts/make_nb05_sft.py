import nbformat as nbf

nb = nbf.v4.new_notebook()
cells = []
cells.append(nbf.v4.new_markdown_cell(
    "# 05 · SFT of a search subagent from reference traces\n\n"
    "Reads task sets, corpora and real mini-swe-agent trajectories; builds an SFT data set (cache `sft/<profile>`), "
    "trains with TRL (`runs/sft-<profile>`), writes figures `sft_loss` and `sft_before_after`."))
params = nbf.v4.new_code_cell(
    'profile = "tiny"          # tiny (CPU smoke, minutes) | cpu (SmolLM2, ~40 min) | gpu; fasbench/configs/sft_<profile>.yaml\n'
    '# None = the profile\'s own value\n'
    'max_steps = None          # training steps\n'
    'n_eval_tasks = None       # dev tasks evaluated before and after\n'
    'eval_max_turns = None     # harness turns per evaluation episode\n'
    'eval_max_new_tokens = None  # tokens generated per turn')
params.metadata["tags"] = ["parameters"]
cells.append(params)
cells.append(nbf.v4.new_code_cell(
    "import polars as pl\n"
    "import plotly.graph_objects as go\n"
    "from fasbench import figures\n"
    "from fasbench.models import load_tokenizer\n"
    "from fasbench.sft.data import build, load_dataset\n"
    "from fasbench.sft.evaluate import dataset_frame, dataset_stats, dev_tasks, evaluate, summary\n"
    "from fasbench.sft.train import load_profile, read_log, train\n\n"
    "over = {'train': {'max_steps': max_steps},\n"
    "        'eval': {'n_tasks': n_eval_tasks, 'max_turns': eval_max_turns, 'max_new_tokens': eval_max_new_tokens}}\n"
    "prof = load_profile(profile, {k: {f: v for f, v in d.items() if v is not None} for k, d in over.items()})\n"
    "stats = build(prof.build, prof.data_dir)   # resumes from the episodes already run\n"
    "print('examples:', stats['examples'])\n"
    "print('dropped:', stats['dropped'])\n"
    "print('unconvertible actions of the real trajectories (top 8):',\n"
    "      sorted(stats['unconvertible'].items(), key=lambda kv: -kv[1])[:8])"))
cells.append(nbf.v4.new_markdown_cell("## Dataset statistics per source"))
cells.append(nbf.v4.new_code_cell(
    "ds = load_dataset(prof.data_dir)\n"
    "frame = dataset_frame(ds, load_tokenizer(prof.train.model))\n"
    "dataset_stats(frame)"))
cells.append(nbf.v4.new_markdown_cell("## Training (TRL SFTTrainer, assistant-only loss; resumes from the last checkpoint)"))
cells.append(nbf.v4.new_code_cell(
    "final = train(prof)\n"
    "log = pl.DataFrame([r for r in read_log(prof.run_dir) if 'loss' in r]).select('step', 'loss')\n"
    "fig = go.Figure(go.Scatter(x=log['step'], y=log['loss'], mode='lines+markers', name='train loss'))\n"
    "fig.update_layout(title=f'SFT loss ({prof.name} profile, {prof.train.model})', xaxis_title='step',\n"
    "                  yaxis_title='loss (assistant tokens)')\n"
    "figures.save(fig, 'sft_loss')\n"
    "fig"))
cells.append(nbf.v4.new_markdown_cell("## Before vs after on the dev split, through the harness"))
cells.append(nbf.v4.new_code_cell(
    "tasks = dev_tasks(prof)\n"
    "rows = evaluate(prof.train.model, tasks, prof, 'before', prof.run_dir / 'eval_before.jsonl')\n"
    "rows += evaluate(str(final), tasks, prof, 'after', prof.run_dir / 'eval_after.jsonl')\n"
    "table = pl.DataFrame([{'model': m, **summary([r for r in rows if r['model'] == m])} for m in ('before', 'after')])\n"
    "table"))
cells.append(nbf.v4.new_code_cell(
    "metrics = ['wellformed', 'report', 'report_wellformed', 'reward']\n"
    "names = {'wellformed': 'well-formed calls', 'report': 'parsable report',\n"
    "         'report_wellformed': 'both', 'reward': 'reward'}\n"
    "fig = go.Figure([go.Bar(name=r['model'], x=[names[m] for m in metrics], y=[r[m] for m in metrics],\n"
    "                        text=[f'{r[m]:.2f}' for m in metrics], textposition='outside')\n"
    "                 for r in table.iter_rows(named=True)])\n"
    "fig.update_yaxes(range=[0, 1.1])\n"
    "fig.update_layout(barmode='group', title=f'Dev episodes before vs after SFT (n={len(tasks)})',\n"
    "                  yaxis_title='share of episodes / mean reward')\n"
    "figures.save(fig, 'sft_before_after')\n"
    "fig"))
nb.cells = cells
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "/work/main/notebooks/05_sft.ipynb")
