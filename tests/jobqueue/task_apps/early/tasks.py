from django_tasks import task


@task()
def shout(text: str) -> str:
    return text.upper()
