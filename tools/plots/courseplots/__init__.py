"""The course's plots (tools/plots/course_plots.py is the command line).

data     the inputs (benchmark JSON, leaderboard.json, gradebook.json), standard library only
style    matplotlib's setup: the Agg backend, the style, reproducible PNG + SVG
figures  roofline, sweep, leaderboard, distribution
lessons  the lessons' figures from results/h100
"""
