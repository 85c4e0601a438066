"""Builds the _chorus extension for `pip install .` (pyproject.toml) with the project's CMake
build: scripts/build _chorus in $CHORUS_BUILD_DIR (default build/), the tree the README's
commands and the tests share, so a built library is not compiled again."""
import glob
import os
import shutil
import subprocess

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        subprocess.run([os.path.join(ROOT, "scripts", "build"), "_chorus"], check=True)
        build_dir = os.path.join(ROOT, os.environ.get("CHORUS_BUILD_DIR", "build"))
        built = glob.glob(os.path.join(build_dir, "python", "chorus", "_chorus*.so"))
        if len(built) != 1:
            raise RuntimeError(f"setup.py: expected one _chorus*.so in {build_dir}/python/chorus, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    package_dir={"": "python"},
    packages=find_packages(where="python", include=["chorus", "chorus.*"]),
    ext_modules=[Extension("chorus._chorus", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
