"""`stream-worker demo`: the whole pipeline on one machine, from camera frames to plate events,
sightings and watch-list alerts on screen.

app.py is the composition root (`run_demo`); each of its jobs has its module here. Importing this
package is cheap: the modules are imported only when the demo runs.
"""
