from django.shortcuts import render

from leaderboard.selectors import benchmark_list


def home(request):
    return render(request, "leaderboard/home.html", {"benchmarks": benchmark_list()})
